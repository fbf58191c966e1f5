// Tests for fibers/fiber_lock.hpp: mutual exclusion for both waiting
// policies (plain threads, fibers, fibers that migrate while holding), the
// pinning contrast between the policies, and the deadlock pinning causes,
// proven by a watchdog and then broken. Multi-carrier cases use Boost's
// work_stealing (one pool per process: ctest runs each case alone; by hand,
// later cases skip themselves).
#include "fibers/fiber_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <boost/fiber/fiber.hpp>
#include <boost/fiber/operations.hpp>

#include "fibers/carrier_pool.hpp"
#include "fibers/virtual_thread.hpp"

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

#define SKIP_IF_WORK_STEALING_USED()                                                       \
  if (CarrierPool::work_stealing_used())                                                   \
  GTEST_SKIP() << "this process already built a work-stealing pool (Boost 1.74 allows one); " \
                  "run this case alone: --gtest_filter=*" << ::testing::UnitTest::GetInstance()->current_test_info()->name()

static_assert(WaitingPolicy<ParkFiber>);
static_assert(WaitingPolicy<ParkCarrier>);
static_assert(!FiberMutex::pins_carrier());
static_assert(PinningMonitor::pins_carrier());

template <class L>
class FiberLockTyped : public ::testing::Test {};
using Locks = ::testing::Types<FiberMutex, PinningMonitor>;
TYPED_TEST_SUITE(FiberLockTyped, Locks);

// A counter updated by read, pause, write: any overlap of two critical
// sections loses an update (and is seen by the `inside` check).
struct Guarded {
  std::int64_t value = 0;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  void enter() {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
  }
  void leave() { inside.fetch_sub(1); }
};

TYPED_TEST(FiberLockTyped, ExcludesPlainThreads) {
  TypeParam lock;
  Guarded g;
  constexpr int kThreads = 4, kIterations = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        lock.lock();
        g.enter();
        const std::int64_t v = g.value;
        if (i % 64 == 0) std::this_thread::yield();
        g.value = v + 1;
        g.leave();
        lock.unlock();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(g.value, kThreads * kIterations);
  EXPECT_EQ(g.overlaps.load(), 0);
  EXPECT_EQ(lock.stats().spins, 0);
}

TYPED_TEST(FiberLockTyped, TryLockAndTimeout) {
  TypeParam lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  std::thread other([&] {
    const auto start = Clock::now();
    EXPECT_FALSE(lock.try_lock_for(30ms));
    EXPECT_GE(Clock::now() - start, 30ms);
  });
  other.join();
  lock.unlock();
  std::thread again([&] {
    EXPECT_TRUE(lock.try_lock_for(1s));
    lock.unlock();
  });
  again.join();
  EXPECT_GE(lock.stats().contended_acquires, 1);
}

TYPED_TEST(FiberLockTyped, ExcludesFibersOnOneCarrier) {
  CarrierPool pool(1);
  TypeParam lock;
  Guarded g;
  constexpr int kFibers = 100, kIterations = 100;
  for (int f = 0; f < kFibers; ++f) {
    pool.spawn([&] {
      for (int i = 0; i < kIterations; ++i) {
        lock.lock();
        g.enter();
        const std::int64_t v = g.value;
        g.value = v + 1;
        g.leave();
        lock.unlock();
        boost::this_fiber::yield();
      }
    });
  }
  ASSERT_TRUE(pool.join_for(30s));
  EXPECT_EQ(g.value, kFibers * kIterations);
  EXPECT_EQ(g.overlaps.load(), 0);
}

// The synchronizer's one-awake-successor rule, on fibers: once a release
// has woken a waiter, further releases wake nobody until that waiter has
// run. One carrier, so the woken fiber cannot run while this one loops;
// the three-state futex algorithm this lock used before woke a waiter on
// every one of these releases. (FiberMutex only: PinningMonitor waiters
// would block the one carrier, this test's own thread.)
TEST(FiberLock, AReleaseWakesNobodyWhileAWokenWaiterIsOnItsWay) {
  FiberMutex lock;
  constexpr int kWaiters = 4, kReleases = 5;
  lock.lock();
  std::vector<boost::fibers::fiber> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      lock.lock();
      lock.unlock();
    });
  }
  for (int i = 0; i < 1000 && lock.queue_length() < kWaiters; ++i) boost::this_fiber::yield();
  ASSERT_EQ(lock.queue_length(), kWaiters) << "the waiters never queued";
  for (int i = 0; i < kReleases; ++i) {
    lock.unlock();
    ASSERT_TRUE(lock.try_lock());  // barging: the woken waiter has not run yet
  }
  EXPECT_EQ(lock.stats().wakes, 1) << "releases woke waiters while a woken one was on its way";
  lock.unlock();
  for (auto& w : waiters) w.join();
}

// The migration test: the holder suspends inside the critical
// section (only legal with the fiber-parking policy) and often resumes, and
// releases, on the other carrier.
TEST(FiberLock, ExcludesFibersThatMigrateWhileHolding) {
  SKIP_IF_WORK_STEALING_USED();
  CarrierPool pool(CarrierPool::Options{.carriers = 2, .idle = CarrierPool::Idle::kSpin});
  FiberMutex lock;
  Guarded g;
  std::atomic<std::int64_t> acquisitions{0};
  std::atomic<int> migrated_while_holding{0};
  const auto give_up = Clock::now() + 5s;
  constexpr int kFibers = 32;
  for (int f = 0; f < kFibers; ++f) {
    pool.spawn([&] {
      for (int i = 0; i < 400 || (migrated_while_holding.load() < 5 && Clock::now() < give_up); ++i) {
        lock.lock();
        g.enter();
        const int took_on = VirtualThread::carrier();
        const std::int64_t v = g.value;
        boost::this_fiber::sleep_for(20us);  // suspends while holding
        g.value = v + 1;
        if (VirtualThread::carrier() != took_on) migrated_while_holding.fetch_add(1);
        g.leave();
        lock.unlock();
        acquisitions.fetch_add(1);
        boost::this_fiber::yield();
      }
    });
  }
  ASSERT_TRUE(pool.join_for(60s));
  EXPECT_EQ(g.value, acquisitions.load());
  EXPECT_EQ(g.overlaps.load(), 0);
  EXPECT_GE(migrated_while_holding.load(), 5) << "no holder migrated within 5 s: the test proved nothing";
  EXPECT_GT(lock.stats().contended_acquires, 0);
  EXPECT_EQ(pool.detector().count(), 0u);
}

// The same load for both policies: K lockers on one lock, each holding it
// across blocking I/O (VirtualThread::sleep_for). Returns the pool's detector
// counts and the number of acquisitions.
struct PinningLoad {
  std::uint64_t waiting_events = 0;
  std::uint64_t holding_events = 0;
  std::int64_t acquisitions = 0;
  std::int64_t contended = 0;
};

template <class Lock>
PinningLoad run_pinning_load(int carriers) {
  CarrierPool pool(carriers);
  Lock lock("test-lock");
  std::atomic<std::int64_t> acquisitions{0};
  for (int f = 0; f < 8; ++f) {
    pool.spawn([&] {
      for (int i = 0; i < 5; ++i) {
        lock.lock();
        VirtualThread::sleep_for(1ms);
        lock.unlock();
        acquisitions.fetch_add(1);
        boost::this_fiber::yield();
      }
    });
  }
  EXPECT_TRUE(pool.join_for(30s));
  return {pool.detector().count(PinningEvent::Kind::kWaitingForLock),
          pool.detector().count(PinningEvent::Kind::kBlockedWhileHolding), acquisitions.load(),
          lock.stats().contended_acquires};
}

TEST(FiberLockPinning, OneCarrierParkFiberNeverPinsParkCarrierPinsEveryHold) {
  const PinningLoad fiber = run_pinning_load<FiberMutex>(1);
  EXPECT_EQ(fiber.acquisitions, 40);
  EXPECT_GT(fiber.contended, 0);  // holders suspend, so others find it taken
  EXPECT_EQ(fiber.waiting_events + fiber.holding_events, 0u);

  const PinningLoad carrier = run_pinning_load<PinningMonitor>(1);
  EXPECT_EQ(carrier.acquisitions, 40);
  // Every hold blocked the carrier across its I/O: one event per acquisition.
  EXPECT_EQ(carrier.holding_events, 40u);
}

TEST(FiberLockPinning, TwoCarriersParkCarrierWaitersPinToo) {
  SKIP_IF_WORK_STEALING_USED();
  const PinningLoad carrier = run_pinning_load<PinningMonitor>(2);
  EXPECT_EQ(carrier.acquisitions, 40);
  EXPECT_EQ(carrier.holding_events, 40u);
  // With two carriers a fiber on one finds the lock held by the other and
  // blocks its carrier waiting: the pre-JEP-491 monitor enter.
  EXPECT_GT(carrier.waiting_events, 0u);
}

TEST(FiberLockPinning, TwoCarriersParkFiberNeverPins) {
  SKIP_IF_WORK_STEALING_USED();
  const PinningLoad fiber = run_pinning_load<FiberMutex>(2);
  EXPECT_EQ(fiber.acquisitions, 40);
  EXPECT_GT(fiber.contended, 0);
  EXPECT_EQ(fiber.waiting_events + fiber.holding_events, 0u);
}

// The deadlock pinning can cause (JEP 491's motivating hazard): fiber A holds
// a carrier-parking lock and *suspends* (a fiber sleep, which a real
// thread-owned lock forbids); fiber B on the same single carrier wants the
// lock and blocks the carrier in the kernel; A's sleep has long ended but A
// can never run again to release. A watchdog (this test's thread) proves the
// stall, then breaks it by releasing the lock on A's behalf.
TEST(FiberLockDeadlock, PinnedWaiterStarvesTheSuspendedHolderUntilTheWatchdogBreaksIt) {
  CarrierPool pool(1);
  PinningMonitor lock("deadlock-monitor");
  std::atomic<bool> a_holds{false}, a_resumed{false}, b_acquired{false}, rescued{false};
  pool.spawn([&] {  // A
    lock.lock();
    a_holds = true;
    boost::this_fiber::sleep_for(5ms);  // the forbidden suspension
    a_resumed = true;
    if (!rescued.load()) lock.unlock();
  });
  pool.spawn([&] {  // B
    while (!a_holds.load()) boost::this_fiber::yield();
    lock.lock();  // blocks the only carrier: A cannot resume
    b_acquired = true;
    lock.unlock();
  });
  // The watchdog: 300 ms is 60x A's sleep; with a free carrier A would
  // have resumed and both would be done.
  const bool finished = pool.join_for(300ms);
  EXPECT_FALSE(finished) << "expected a pinning deadlock";
  EXPECT_TRUE(a_holds.load());
  EXPECT_FALSE(a_resumed.load()) << "A ran: the carrier was not blocked";
  EXPECT_FALSE(b_acquired.load());
  // Break it: release on A's behalf (legal: the word has no owner thread).
  rescued = true;
  lock.unlock();
  ASSERT_TRUE(pool.join_for(10s)) << "the deadlock did not break";
  EXPECT_TRUE(a_resumed.load());
  EXPECT_TRUE(b_acquired.load());
  ASSERT_GE(pool.detector().count(PinningEvent::Kind::kWaitingForLock), 1u);
  // B blocked its carrier for (about) the whole watchdog period.
  EXPECT_GE(pool.detector().first_events().at(0).duration, 250ms);
}

TEST(FiberLockDeadlock, TheSameScheduleWithTheFiberParkingLockDoesNotStall) {
  CarrierPool pool(1);
  FiberMutex lock;
  std::atomic<bool> a_holds{false}, b_acquired{false};
  pool.spawn([&] {
    lock.lock();
    a_holds = true;
    boost::this_fiber::sleep_for(5ms);
    lock.unlock();
  });
  pool.spawn([&] {
    while (!a_holds.load()) boost::this_fiber::yield();
    lock.lock();  // suspends B; the carrier resumes A when its sleep ends
    b_acquired = true;
    lock.unlock();
  });
  ASSERT_TRUE(pool.join_for(10s)) << "stalled: the fiber-parking lock blocked the carrier";
  EXPECT_TRUE(b_acquired.load());
  EXPECT_EQ(pool.detector().count(), 0u);
}

}  // namespace
}  // namespace locklab::fibers
