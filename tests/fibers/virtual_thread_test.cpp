// Tests for fibers/virtual_thread.hpp: pinning bookkeeping and the
// pinning-aware sleep. One-carrier pools (round_robin) only: repeatable in
// one process, and one carrier makes "the carrier was blocked" provable.
#include "fibers/virtual_thread.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include <boost/fiber/operations.hpp>

#include "fibers/carrier_pool.hpp"

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(VirtualThread, PinDepthNests) {
  VirtualThread vt(7, nullptr);
  int lock_a = 0, lock_b = 0;
  EXPECT_FALSE(vt.pinned());
  vt.pin(&lock_a, "a");
  vt.pin(&lock_b, "b");
  EXPECT_EQ(vt.pin_depth(), 2);
  vt.unpin();
  EXPECT_TRUE(vt.pinned());
  vt.unpin();
  EXPECT_FALSE(vt.pinned());
  EXPECT_EQ(vt.id(), 7u);
}

TEST(VirtualThread, UnpinnedSleepSuspendsOnlyTheFiber) {
  CarrierPool pool(1);
  std::atomic<bool> sleeper_done{false};
  std::atomic<int> ticks_during_sleep{0};
  pool.spawn([&] {
    VirtualThread::sleep_for(200ms);
    sleeper_done = true;
  });
  // While the sleeper sleeps, another fiber on the single carrier runs.
  pool.spawn([&] {
    for (int i = 0; i < 3; ++i) {
      boost::this_fiber::sleep_for(1ms);
      if (!sleeper_done.load()) ticks_during_sleep.fetch_add(1);
    }
  });
  ASSERT_TRUE(pool.join_for(10s));
  EXPECT_EQ(ticks_during_sleep.load(), 3);
  EXPECT_EQ(pool.detector().count(), 0u);
}

TEST(VirtualThread, PinnedSleepBlocksTheCarrierAndIsReported) {
  CarrierPool pool(1);
  int monitor = 0;  // stands for a lock; only its address is used
  std::atomic<bool> pinned_done{false};
  Clock::duration longest_tick{0};
  // A ticker that asks for 1 ms naps: while the pinned fiber blocks the
  // only carrier, a nap cannot end, so one nap lasts the whole pinned sleep.
  pool.spawn([&] {
    while (!pinned_done.load()) {
      const auto start = Clock::now();
      boost::this_fiber::sleep_for(1ms);
      longest_tick = std::max(longest_tick, Clock::now() - start);
    }
  });
  pool.spawn([&] {
    boost::this_fiber::sleep_for(5ms);  // let the ticker tick first
    VirtualThread* self = VirtualThread::current();
    self->pin(&monitor, "monitor");
    VirtualThread::sleep_for(60ms);  // pinned: the carrier sleeps
    self->unpin();
    pinned_done = true;
  });
  ASSERT_TRUE(pool.join_for(10s));
  ASSERT_EQ(pool.detector().count(PinningEvent::Kind::kBlockedWhileHolding), 1u);
  EXPECT_EQ(pool.detector().count(PinningEvent::Kind::kWaitingForLock), 0u);
  const auto events = pool.detector().first_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].lock, &monitor);
  EXPECT_STREQ(events[0].lock_name, "monitor");
  EXPECT_EQ(events[0].carrier, 0);
  EXPECT_GE(events[0].duration, 60ms);
  EXPECT_GE(longest_tick, 50ms) << "the ticker ran while the carrier should have been blocked";
}

TEST(VirtualThread, PlainThreadSleepNeedsNoPool) {
  const auto start = Clock::now();
  VirtualThread::sleep_for(2ms);
  EXPECT_GE(Clock::now() - start, 2ms);
  EXPECT_EQ(VirtualThread::current(), nullptr);
}

}  // namespace
}  // namespace locklab::fibers
