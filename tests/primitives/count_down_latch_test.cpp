#include "primitives/count_down_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using locklab::testing::eventually;

TEST(CountDownLatch, EveryWaiterSeesEveryPartysWork) {
  constexpr int kParties = 4;
  constexpr int kWaiters = 6;
  for (int round = 0; round < 20; ++round) {
    CountDownLatch latch(kParties);
    std::int64_t work[kParties] = {};  // plain: the latch must order them
    std::atomic<int> saw_all{0};
    std::vector<std::jthread> threads;
    for (int w = 0; w < kWaiters; ++w) {
      threads.emplace_back([&] {
        latch.await();
        std::int64_t sum = 0;
        for (auto x : work) sum += x;
        if (sum == kParties) saw_all.fetch_add(1);
      });
    }
    for (int p = 0; p < kParties; ++p) {
      threads.emplace_back([&, p] {
        work[p] = 1;
        latch.count_down();
      });
    }
    threads.clear();
    ASSERT_EQ(saw_all.load(), kWaiters) << "round " << round;
    ASSERT_EQ(latch.count(), 0);
  }
}

TEST(CountDownLatch, WaitersSleepUntilTheLastCountDown) {
  CountDownLatch latch(2);
  std::atomic<int> out{0};
  std::vector<std::jthread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      latch.await();
      out.fetch_add(1);
    });
  }
  latch.count_down();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(out.load(), 0) << "a waiter left with the count at 1";
  EXPECT_EQ(latch.count(), 1);
  latch.count_down();
  EXPECT_TRUE(eventually([&] { return out.load() == 3; })) << "a waiter was not woken";
}

TEST(CountDownLatch, TimedAwaitTimesOutNoEarlierThanAskedAndChangesNothing) {
  CountDownLatch latch(1);
  const auto t0 = Clock::now();
  EXPECT_FALSE(latch.await_for(30ms));
  EXPECT_GE(Clock::now() - t0, 30ms);
  EXPECT_FALSE(latch.await_for(0ms));
  EXPECT_FALSE(latch.await_until(Clock::now() - 1s));
  EXPECT_EQ(latch.count(), 1);
  // A timed-out waiter leaves its "waiters" mark; later waiters still wake.
  std::atomic<bool> woke{false};
  std::jthread waiter([&] { woke.store(latch.await_for(10s)); });
  std::this_thread::sleep_for(5ms);
  latch.count_down();
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_TRUE(latch.await_for(0ms));
}

TEST(CountDownLatch, ZeroIsOpenAndStaysOpen) {
  CountDownLatch latch(0);
  latch.await();
  EXPECT_TRUE(latch.await_for(0ms));
  latch.count_down();
  EXPECT_EQ(latch.count(), 0) << "count_down at zero does nothing";
}

TEST(CountDownLatch, InvalidCountsThrow) {
  EXPECT_THROW(CountDownLatch(-1), std::invalid_argument);
  EXPECT_THROW(CountDownLatch(CountDownLatch::kMaxCount + 1), std::invalid_argument);
  CountDownLatch big(CountDownLatch::kMaxCount);
  big.count_down();
  EXPECT_EQ(big.count(), CountDownLatch::kMaxCount - 1);
}

}  // namespace
}  // namespace locklab
