#include "primitives/futex_mutex.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/primitives/lock_conformance.hpp"
#include "tests/primitives/lock_hammer.hpp"
#include "tests/primitives/spin_policy_variants.hpp"

using FutexMutexTypes = locklab::testing::SpinPolicyVariants<locklab::FutexMutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(Futex, LockConformance, FutexMutexTypes);

namespace locklab {
namespace {

using namespace std::chrono_literals;

using testing::hammer;

TEST(FutexMutexTest, ParksAndWakesUnderContentionWithLongHolds) {
  // A holder that sleeps 500 us outlasts any spin budget (max 500 polls of
  // ~20 ns): waiters must park, and unlocks must wake them.
  FutexMutex lock;
  EXPECT_EQ(hammer(lock, 4, 50, 500us), 200u);
  const auto s = lock.stats();
  EXPECT_GT(s.parks, 0);
  EXPECT_GT(s.wakes, 0);
  EXPECT_GT(s.contended_acquires, 0);
  EXPECT_FALSE(lock.is_locked());
}

TEST(FutexMutexTest, SpinBudgetShrinksToItsFloorWhenSpinningFails) {
  FutexMutex lock;
  const auto& p = lock.policy();
  ASSERT_EQ(lock.spin_budget(), p.initial_spins);
  // Every spin fails against a 1 ms hold; each failure cuts the budget by a
  // quarter, so ~10 failures reach the floor. Bounded rounds.
  for (int round = 0; round < 20 && lock.spin_budget() > p.min_spins; ++round) hammer(lock, 2, 10, 1000us);
  EXPECT_EQ(lock.spin_budget(), p.min_spins);
}

// Busy-waits `d` on the steady clock (a sleep this short rounds up to tens
// of microseconds and gives the core away).
void busy_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Two threads lock, hold ~3 us, unlock and think ~5 us (outside the lock,
// so a spinner that waited can take the lock without the releaser coming
// straight back) until `done()` or 20 s. This is the workload spinning is
// for: a waiter arrives while the lock is held and wins after a real wait.
template <class Done>
void short_holds_with_think_time_until(FutexMutex& lock, Done done) {
  std::atomic<bool> stop{false};
  {
    std::vector<std::jthread> ts;
    for (int t = 0; t < 2; ++t) {
      ts.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          {
            std::lock_guard g(lock);
            busy_for(3us);
          }
          busy_for(5us);
        }
      });
    }
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    stop = true;
  }
}

TEST(FutexMutexTest, SpinBudgetGrowsWhenSpinningSucceeds) {
  SpinPolicy p = SpinPolicy::adaptive();
  p.min_spins = 16;
  p.initial_spins = 16;
  p.max_spins = 4096;
  FutexMutex lock(p);
  // Judged while the threads run: after they stop, a last failed spin may
  // already have shrunk the budget again.
  std::uint32_t peak = 0;
  short_holds_with_think_time_until(lock, [&] {
    peak = std::max(peak, lock.spin_budget());
    return peak > 16;
  });
  EXPECT_GT(peak, 16u);
  EXPECT_LE(lock.spin_budget(), 4096u);
}

TEST(FutexMutexTest, ProbesRestartABudgetThatDecayedToZero) {
  // The default floor is 0: long holds decay the budget to 0 (no spinning
  // at all), and then only every kProbeEvery-th contended acquire of a
  // thread spins. Those probes must let the budget come back when the
  // workload turns into one that spinning wins. Bounded rounds and time.
  FutexMutex lock;
  ASSERT_EQ(lock.policy().min_spins, 0u);
  for (int round = 0; round < 40 && lock.spin_budget() > 0; ++round) hammer(lock, 2, 10, 1000us);
  ASSERT_EQ(lock.spin_budget(), 0u);
  std::uint32_t peak = 0;
  short_holds_with_think_time_until(lock, [&] {
    peak = std::max(peak, lock.spin_budget());
    return peak > 0;
  });
  EXPECT_GT(peak, 0u);
  EXPECT_LE(lock.spin_budget(), lock.policy().max_spins);
}

TEST(FutexMutexTest, SpinBudgetStaysWithinBoundsUnderMixedLoad) {
  SpinPolicy p = SpinPolicy::adaptive();
  p.min_spins = 8;
  p.initial_spins = 50;
  p.max_spins = 200;
  FutexMutex lock(p);
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> lo{p.max_spins};
  std::atomic<std::uint32_t> hi{0};
  std::jthread watcher([&] {
    while (!stop.load()) {
      const std::uint32_t b = lock.spin_budget();
      if (b < lo.load()) lo.store(b);
      if (b > hi.load()) hi.store(b);
      std::this_thread::yield();
    }
  });
  hammer(lock, 3, 2'000);             // short sections: grows
  hammer(lock, 3, 60, 300us, 2);      // long holds: shrinks
  hammer(lock, 3, 2'000);
  stop.store(true);
  watcher.join();
  EXPECT_GE(lo.load(), p.min_spins);
  EXPECT_LE(hi.load(), p.max_spins);
  EXPECT_GE(lock.spin_budget(), p.min_spins);
  EXPECT_LE(lock.spin_budget(), p.max_spins);
}

TEST(FutexMutexTest, InitialBudgetIsClampedIntoBounds) {
  SpinPolicy p = SpinPolicy::adaptive();
  p.min_spins = 10;
  p.max_spins = 20;
  p.initial_spins = 1000;
  EXPECT_EQ(FutexMutex(p).spin_budget(), 20u);
  p.initial_spins = 1;
  EXPECT_EQ(FutexMutex(p).spin_budget(), 10u);
}

TEST(FutexMutexTest, ParkOnlyNeverSpins) {
  FutexMutex lock(SpinPolicy::park_only());
  hammer(lock, 4, 50, 200us);
  const auto s = lock.stats();
  EXPECT_EQ(s.spins, 0);
  EXPECT_GT(s.parks, 0);
}

TEST(FutexMutexTest, SpinOnlyNeverParks) {
  FutexMutex lock(SpinPolicy::spin_only());
  hammer(lock, 3, 30, 200us);
  const auto s = lock.stats();
  EXPECT_EQ(s.parks, 0);
  EXPECT_EQ(s.wakes, 0);
  EXPECT_GT(s.spins, 0);
}

TEST(FutexMutexTest, FixedBudgetNeverChanges) {
  FutexMutex lock(SpinPolicy::fixed(77));
  hammer(lock, 3, 30, 300us);
  hammer(lock, 2, 5'000);
  EXPECT_EQ(lock.spin_budget(), 77u);
}

TEST(FutexMutexTest, TimedTryOnSpinOnlyTimesOut) {
  FutexMutex lock(SpinPolicy::spin_only());
  lock.lock();
  std::jthread other([&] {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(lock.try_lock_for(20ms));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  });
  other.join();
  lock.unlock();
}

TEST(FutexMutexTest, TimedTryWithOtherClockConverts) {
  FutexMutex lock;
  EXPECT_TRUE(lock.try_lock_until(std::chrono::system_clock::now() + 10ms));
  std::jthread other([&] { EXPECT_FALSE(lock.try_lock_until(std::chrono::system_clock::now() + 10ms)); });
  other.join();
  lock.unlock();
}

// The scheduler state of a thread of this process from
// /proc/self/task/<tid>/stat: 'S' while it sleeps (here: in futex_wait),
// 'R' while it runs or is runnable.
char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const std::size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

TEST(FutexMutexTest, ReleaseHandsOffToASleeperInsteadOfUnlocking) {
  // The first release that finds a sleeper is due a hand-off (see "Fairness"
  // in the header): the lock must go to the sleeper without ever being
  // free, so the releaser cannot take it straight back.
  FutexMutex lock(SpinPolicy::park_only());
  lock.lock();
  std::atomic<pid_t> tid{0};
  std::atomic<bool> got{false};
  std::atomic<bool> release{false};
  std::jthread sleeper([&] {
    tid = gettid();
    lock.lock();
    got = true;
    while (!release) std::this_thread::sleep_for(1ms);
    lock.unlock();
  });
  ASSERT_TRUE(locklab::testing::eventually([&] { return tid != 0 && thread_state(tid) == 'S'; }))
      << "the waiter never went to sleep";
  lock.unlock();
  EXPECT_FALSE(lock.try_lock()) << "the lock was free after a release that found a sleeper: no hand-off";
  EXPECT_TRUE(locklab::testing::eventually([&] { return got.load(); }));
  EXPECT_EQ(lock.stats().handoffs, 1);
  release = true;
  sleeper.join();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(FutexMutexTest, HandOffWithNobodyAsleepFreesTheLock) {
  // A timed waiter that gives up leaves the word at "maybe sleepers" (2).
  // The next release is due a hand-off but wakes nobody: it must take the
  // hand-off back and leave the lock free, not owned by no one forever.
  FutexMutex lock(SpinPolicy::park_only());
  lock.lock();
  std::jthread([&] { EXPECT_FALSE(lock.try_lock_for(20ms)); }).join();
  EXPECT_GE(lock.stats().parks, 1);
  lock.unlock();
  EXPECT_EQ(lock.stats().handoffs, 0);
  EXPECT_TRUE(lock.try_lock()) << "a hand-off to nobody left the lock taken";
  lock.unlock();
}

}  // namespace
}  // namespace locklab
