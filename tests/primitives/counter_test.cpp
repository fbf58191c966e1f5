// Conformance tests every Counter (primitives/counter.hpp) must pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "primitives/cas_loop_counter.hpp"
#include "primitives/counter.hpp"
#include "primitives/fetch_add_counter.hpp"
#include "primitives/mutex_counter.hpp"
#include "primitives/striped_counter.hpp"

namespace locklab {
namespace {

template <class C>
class CounterTest : public ::testing::Test {};

using AllCounters = ::testing::Types<FetchAddCounter, CasLoopCounter, MutexCounter, StripedCounter>;
TYPED_TEST_SUITE(CounterTest, AllCounters);

// More threads than the 2 cores CI has, so threads are preempted mid-update.
constexpr int kThreads = 8;
constexpr int kIncrementsPerThread = 50'000;

TYPED_TEST(CounterTest, StartsAtZero) {
  TypeParam c;
  EXPECT_EQ(c.get(), 0);
}

TYPED_TEST(CounterTest, AddsSignedValuesSingleThreaded) {
  TypeParam c;
  c.add(40);
  c.increment();
  c.add(-5);
  c.add(INT64_C(1) << 40);
  EXPECT_EQ(c.get(), 36 + (INT64_C(1) << 40));
}

TYPED_TEST(CounterTest, ExactTotalUnderContention) {
  TypeParam c;
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < kIncrementsPerThread; ++i) c.increment();
    });
  }
  threads.clear();  // join
  EXPECT_EQ(c.get(), std::int64_t{kThreads} * kIncrementsPerThread);
}

TYPED_TEST(CounterTest, MixedAddsCancelExactly) {
  // Half the threads add +3, half add -3: any lost or doubled update shows
  // up as a non-zero result.
  TypeParam c;
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    const std::int64_t delta = (t % 2 == 0) ? 3 : -3;
    threads.emplace_back([&c, delta] {
      for (int i = 0; i < kIncrementsPerThread; ++i) c.add(delta);
    });
  }
  threads.clear();
  EXPECT_EQ(c.get(), 0);
}

}  // namespace
}  // namespace locklab
