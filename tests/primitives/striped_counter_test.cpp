#include "primitives/striped_counter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <thread>
#include <vector>

namespace locklab {
namespace {

TEST(StripedCounterTest, StaysOneWordWhileUncontended) {
  StripedCounter c;
  for (int i = 0; i < 100'000; ++i) c.increment();
  EXPECT_EQ(c.cell_count(), 0u) << "a single thread never loses a CAS on base, so it must not inflate";
  EXPECT_EQ(c.sum(), 100'000);
}

TEST(StripedCounterTest, InflatesUnderContentionToAPowerOfTwoCells) {
  // Contention is a matter of timing, so keep adding (bounded: 20 s) until
  // some add loses a race on base. On 2 cores with 4 threads this takes
  // milliseconds.
  StripedCounter c;
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> added{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        c.increment();
        ++n;
      }
      added.fetch_add(n);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.cell_count() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  threads.clear();
  const std::uint32_t cells = c.cell_count();
  ASSERT_GT(cells, 0u) << "4 threads for 20 s never contended on base";
  EXPECT_TRUE(std::has_single_bit(cells));
  EXPECT_GE(cells, std::thread::hardware_concurrency());
  EXPECT_EQ(c.sum(), added.load()) << "no add may be lost across inflation";
}

TEST(StripedCounterTest, SumIsMonotonicWhileWritersRun) {
  StripedCounter c;
  std::atomic<bool> stop{false};
  std::vector<std::jthread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 200'000 && !stop.load(std::memory_order_relaxed); ++i) c.increment();
    });
  }
  std::int64_t previous = 0;
  int decreases = 0;
  for (int i = 0; i < 20'000; ++i) {
    const std::int64_t now = c.sum();
    if (now < previous) ++decreases;
    previous = now;
  }
  stop = true;
  writers.clear();
  EXPECT_EQ(decreases, 0);
  EXPECT_GE(c.sum(), previous);
}

TEST(StripedCounterTest, CountersAreIndependent) {
  StripedCounter a, b;
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20'000; ++i) {
        a.increment();
        b.add(2);
      }
    });
  }
  threads.clear();
  EXPECT_EQ(a.sum(), 80'000);
  EXPECT_EQ(b.sum(), 160'000);
}

}  // namespace
}  // namespace locklab
