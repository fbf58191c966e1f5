#include "primitives/cas_loop_counter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace locklab {
namespace {

#if defined(__x86_64__) || defined(__i386__)
TEST(CasLoopCounterTest, NoFailuresWithoutContention) {
  // x86's lock cmpxchg fails only if the value changed; with one thread it
  // never does. (LL/SC machines may fail spuriously, hence x86 only.)
  CasLoopCounter c;
  for (int i = 0; i < 100'000; ++i) c.increment();
  EXPECT_EQ(c.failures(), 0);
  EXPECT_EQ(c.get(), 100'000);
}
#endif

TEST(CasLoopCounterTest, FailuresAreCountedUnderContention) {
  // 4 threads on (at least) 2 cores race on one word. Keep going in rounds
  // (bounded: 20 s) until some CAS has failed, then check the totals.
  CasLoopCounter c;
  std::int64_t expected = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.failures() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&c] {
        for (int i = 0; i < 100'000; ++i) c.increment();
      });
    }
    threads.clear();
    expected += 400'000;
  }
  EXPECT_GT(c.failures(), 0) << "no CAS ever failed under contention";
  EXPECT_EQ(c.get(), expected) << "failed CAS attempts must be retried, never lost";
}

}  // namespace
}  // namespace locklab
