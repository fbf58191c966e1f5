#include "primitives/adaptive_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/primitives/lock_conformance.hpp"
#include "tests/primitives/lock_hammer.hpp"
#include "tests/primitives/spin_policy_variants.hpp"

using AdaptiveMutexTypes = locklab::testing::SpinPolicyVariants<locklab::AdaptiveMutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(Adaptive, LockConformance, AdaptiveMutexTypes);

namespace locklab {
namespace {

using namespace std::chrono_literals;

using testing::hammer;

TEST(AdaptiveMutexTest, EveryWakeWakesASleeperAndEverySleeperIsWokenOnce) {
  // The property the futex-word mutex lacks: a release wakes only a thread
  // that is queued in the lot, so (with no timed waits) the wakes counted by
  // releases equal the parks that ended in a wake-up, exactly. A release
  // that woke a thread that was not asleep, or a sleeper woken twice, would
  // break the equality.
  AdaptiveMutex lock;
  EXPECT_EQ(hammer(lock, 4, 50, 300us, 2), 200u);
  const LockStatsSnapshot s = lock.stats();
  EXPECT_GT(s.parks, 0);
  EXPECT_EQ(s.wakes, s.parks);
  EXPECT_LE(s.handoffs, s.wakes);
  EXPECT_FALSE(lock.is_locked());
}

TEST(AdaptiveMutexTest, ParkOnlyNeverSpins) {
  testing::WithSpinPolicy<AdaptiveMutex, testing::park_only> lock;
  hammer(lock, 3, 40, 200us);
  const LockStatsSnapshot s = lock.stats();
  EXPECT_EQ(s.spins, 0);
  EXPECT_GT(s.parks, 0);
  EXPECT_EQ(s.wakes, s.parks);
}

// A newcomer does not spin by default: it queues at once and, woken with the
// permit free, takes it without a poll. With newcomers_spin it polls before
// it queues (the holder keeps the lock 20 ms, far past any spin allowance).
TEST(AdaptiveMutexTest, ANewcomerQueuesWithoutSpinningUnlessThePolicySaysSo) {
  for (const bool newcomers_spin : {false, true}) {
    SCOPED_TRACE(newcomers_spin ? "newcomers_spin" : "default");
    AdaptiveMutex lock(newcomers_spin ? SpinPolicy::adaptive().with_newcomers_spinning() : SpinPolicy::adaptive());
    lock.lock();
    std::atomic<bool> started{false};
    std::jthread waiter([&] {
      started.store(true);
      lock.lock();
      lock.unlock();
    });
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(20ms);  // let it queue
    lock.unlock();
    waiter.join();
    const LockStatsSnapshot s = lock.stats();
    EXPECT_EQ(s.contended_acquires, 1);
    EXPECT_EQ(s.parks, 1);
    if (newcomers_spin) {
      EXPECT_GT(s.spins, 0);
    } else {
      EXPECT_EQ(s.spins, 0);
    }
  }
}

// The lone spinner (with newcomers_spin): with its adaptive budget at 0
// (here from the start), a waiter that is the only thread spinning, with
// nobody queued, still spins
// (up to SpinPolicy::kLoneSpinPolls, ~50 us) instead of parking at once. A
// holder keeps the lock ~20 us (~1,000 polls), 20 rounds. Without the rule
// the waiter spins only on its probes (one contended acquire in 16, 100
// polls: at most 200 polls here); with it, about 1,000 a round. Counted in
// polls, not parks, so that a descheduled holder (the waiter then spins
// its full allowance and parks) cannot make it flaky.
TEST(AdaptiveMutexTest, ALoneSpinnerOutlastsADecayedBudget) {
  AdaptiveMutex lock(SpinPolicy{SpinPolicy::Kind::kAdaptive, 0, 0, SpinPolicy::kDefaultMaxSpins}.with_newcomers_spinning());
  constexpr int kRounds = 20;
  std::atomic<int> round{0};      // the round the waiter may start
  std::atomic<int> arrived{0};    // the last round the waiter started
  std::atomic<int> done{0};       // the last round the waiter finished
  std::jthread waiter([&] {
    for (int r = 1; r <= kRounds; ++r) {
      while (round.load() < r) std::this_thread::yield();
      arrived.store(r);
      lock.lock();
      lock.unlock();
      done.store(r);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    lock.lock();
    round.store(r);
    while (arrived.load() < r) std::this_thread::yield();
    const auto until = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < until) {
    }
    lock.unlock();
    while (done.load() < r) std::this_thread::yield();
  }
  waiter.join();
  const LockStatsSnapshot s = lock.stats();
  ASSERT_GT(s.contended_acquires, 0);
  EXPECT_GT(s.spins, static_cast<std::int64_t>(SpinPolicy::kDefaultMaxSpins))
      << "the waiter did not spin past its budget of 0 (" << s.parks << " parks)";
}

TEST(AdaptiveMutexTest, AQueuedThreadGetsTheLockFromARunningBarger) {
  // One thread re-takes the lock in a tight loop (it always runs, so it
  // would win every race against a sleeper that must first be scheduled);
  // another calls lock(). Starvation mode (newcomers stop barging once the
  // woken head has waited 2 ms) must get the queued thread in. A liveness check with a
  // generous bound, not a speed assertion.
  AdaptiveMutex lock;
  std::atomic<bool> stop{false};
  std::atomic<bool> got_it{false};
  std::jthread barger([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::lock_guard g(lock);
    }
  });
  std::this_thread::sleep_for(5ms);
  std::jthread waiter([&] {
    for (int i = 0; i < 20; ++i) {
      std::lock_guard g(lock);
    }
    got_it = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!got_it && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  stop = true;
  waiter.join();
  barger.join();
  EXPECT_TRUE(got_it) << "20 acquisitions against a running barger did not finish within 20 s";
}

// The woken head is polite (queued_synchronizer.hpp, "A polite
// successor"): behind a thread that keeps re-taking the lock it dozes, on
// a timer of its own, instead of sleeping where the barger's next release
// would wake it. Dozes are counted apart from parks, so every park still
// ends in exactly one wake.
// A thread that re-takes the lock until `stop`, holding it ~2 us a time,
// so that a poll finds it held (with empty sections it is free most of the
// time, and a successor that finds it free for the grace takes it).
std::jthread barger_holding_2us(AdaptiveMutex& lock, const std::atomic<bool>& stop) {
  return std::jthread([&lock, &stop] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::lock_guard g(lock);
      const auto until = std::chrono::steady_clock::now() + 2us;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
}

TEST(AdaptiveMutexTest, APoliteSuccessorDozesBehindARunningBarger) {
  AdaptiveMutex lock;
  std::atomic<bool> stop{false};
  std::jthread barger = barger_holding_2us(lock, stop);
  std::this_thread::sleep_for(2ms);
  // The waiter leaves between acquisitions, so that each one starts as a
  // newcomer, queues, and is woken by a release of the barger's. It goes
  // on until it has dozed (at most 2,000 rounds, ~0.5 s): on a loaded
  // machine the barger is often not running when the waiter looks, and a
  // lock that stays free is rightly taken, not dozed behind.
  std::jthread waiter([&] {
    for (int i = 0; i < 2000 && lock.stats().dozes == 0; ++i) {
      { std::lock_guard g(lock); }
      std::this_thread::sleep_for(200us);
    }
  });
  waiter.join();
  stop = true;
  barger.join();
  const LockStatsSnapshot s = lock.stats();
  EXPECT_GT(s.dozes, 0) << s.contended_acquires << " contended acquires, " << s.parks << " parks, " << s.wakes
                        << " wakes";
  EXPECT_EQ(s.wakes, s.parks);
}

// A doze is timed, so a barger that leaves while the successor dozes (its
// releases announced to nobody) cannot strand it: the successor's own
// timer brings it back to a free lock. An untimed doze would hang here.
TEST(AdaptiveMutexTest, ADozingSuccessorTakesTheLockAfterTheBargerLeaves) {
  // Rounds until the barger has twice left while the waiter dozed, for at
  // most 3 s (the waiter may also win its lock before that, and on a
  // loaded machine often does; each round is a few ms).
  int left_a_dozer = 0;  // rounds in which the barger left while the waiter dozed
  const auto give_up_at = std::chrono::steady_clock::now() + 3s;
  for (int round = 0; left_a_dozer < 2 && std::chrono::steady_clock::now() < give_up_at; ++round) {
    AdaptiveMutex lock;
    std::atomic<bool> stop{false};
    std::atomic<bool> got_it{false};
    std::jthread barger = barger_holding_2us(lock, stop);
    std::this_thread::sleep_for(1ms);
    std::jthread waiter([&] {
      std::lock_guard g(lock);
      got_it = true;
    });
    // Leave once the waiter has dozed at least once (or has the lock).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (lock.stats().dozes == 0 && !got_it && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    stop = true;
    barger.join();
    if (!got_it && lock.stats().dozes > 0) ++left_a_dozer;
    while (!got_it && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    if (!got_it) {
      std::fprintf(stderr, "round %d: the waiter did not get a free lock within 20 s\n", round);
      std::abort();  // a thread stuck in lock() cannot be joined
    }
    waiter.join();
  }
  // Every round above checked that the waiter got the lock; whether one of
  // them tested the doze depends on the machine's load.
  if (left_a_dozer == 0) GTEST_SKIP() << "in 3 s no round left the lock while the waiter dozed (a loaded machine)";
}

// Timed waiters that give up from a doze leave no flag behind: beside a
// running barger, timed tries with short deadlines and an untimed locker
// must all finish (a hang is the failure, as in the test below).
TEST(AdaptiveMutexTest, TimedTriesBehindABargerLeaveTheLockUsable) {
  AdaptiveMutex lock;
  std::atomic<bool> stop{false};
  std::jthread barger([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::lock_guard g(lock);
    }
  });
  std::vector<std::jthread> timed;
  for (int t = 0; t < 2; ++t) {
    timed.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t) + 7);
      for (int i = 0; i < 100; ++i) {
        if (lock.try_lock_for(std::chrono::microseconds(50 + rng() % 1000))) lock.unlock();
      }
    });
  }
  std::atomic<bool> untimed_done{false};
  std::jthread untimed([&] {
    for (int i = 0; i < 50; ++i) {
      std::lock_guard g(lock);
    }
    untimed_done = true;
  });
  for (auto& t : timed) t.join();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!untimed_done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  stop = true;
  barger.join();
  if (!untimed_done) {
    std::fprintf(stderr, "untimed locker stuck behind timed tries that gave up\n");
    std::abort();  // a thread stuck in lock() cannot be joined
  }
  untimed.join();
  EXPECT_FALSE(lock.is_locked());
}

TEST(AdaptiveMutexTest, TimedOutWaitersLeaveTheLockUsable) {
  // Timed tries that give up (some queued, some as the woken successor)
  // must leave no "parked" or "woken" bit that stops later releases from
  // waking a sleeper: untimed lockers run beside them and must all finish.
  // A lost wake-up leaves one asleep for good, so a hang is the failure
  // (detected with a bound, then the process aborts: a stuck thread cannot
  // be joined). One such interleaving (a woken successor that times out
  // while the lock is free, after a release skipped its wake-up) is too
  // narrow for this run to produce reliably; queued_synchronizer_test's
  // AWokenHeadThatTimesOutPassesTheFreePermitsOn produces it every time.
  AdaptiveMutex lock;
  std::atomic<std::uint64_t> acquired{0};
  std::atomic<int> untimed_done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t) + 1);
      for (int i = 0; i < 300; ++i) {
        if (lock.try_lock_for(std::chrono::microseconds(rng() % 300))) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
          acquired.fetch_add(1, std::memory_order_relaxed);
          lock.unlock();
        }
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        std::lock_guard g(lock);
        acquired.fetch_add(1, std::memory_order_relaxed);
      }
      untimed_done.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (untimed_done.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  if (untimed_done.load() < 2) {
    std::fprintf(stderr, "an untimed lock() did not return within 30 s: a lost wake-up\n");
    std::abort();
  }
  for (auto& t : ts) t.join();
  EXPECT_GE(acquired.load(), 600u);
  EXPECT_FALSE(lock.is_locked());
  // A holder, a blocked locker, a release: the locker must get the lock.
  lock.lock();
  std::atomic<bool> got_it{false};
  std::jthread locker([&] {
    std::lock_guard g(lock);
    got_it = true;
  });
  std::this_thread::sleep_for(20ms);  // let it queue
  lock.unlock();
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!got_it && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(got_it);
}

TEST(AdaptiveMutexTest, TheUncontendedPathTouchesNothingButTheWord) {
  AdaptiveMutex lock;
  for (int i = 0; i < 1000; ++i) {
    lock.lock();
    lock.unlock();
    ASSERT_TRUE(lock.try_lock());
    lock.unlock();
  }
  const LockStatsSnapshot s = lock.stats();
  EXPECT_EQ(s.contended_acquires + s.spins + s.parks + s.wakes + s.handoffs, 0);
  EXPECT_EQ(lock.spin_budget(), SpinPolicy::kDefaultInitialSpins);
}

}  // namespace
}  // namespace locklab
