// my_futex_mutex_test.cpp — the checks of the exercise futex_mutex: the
// lab's conformance suite (tests/primitives/lock_conformance.hpp: mutual
// exclusion with 8 threads, try_lock never blocks, no lost wake-ups, the
// standard wrappers), then three checks of the ladder itself, which count
// the futex calls your lock makes through exercises/support/counted_futex.hpp:
//
//   NoFutexCallWhenUncontended     100,000 lock/unlock pairs and 1,000
//                                  try_lock/unlock pairs by one thread make
//                                  no futex_wait and no futex_wake call.
//                                  Step 1 (unlock always wakes) fails here.
//   NoFutexCallOnceContentionIsOver  the same (10,000 pairs) after a
//                                  contended run, once every waiter has
//                                  left: the word must come back to "nobody
//                                  asleep".
//   WaitersSleepAndAllWake         the test holds the lock while 4 threads
//                                  call lock(): none may get in, and they
//                                  must call futex_wait (a lock that only
//                                  spins fails); after the release each
//                                  takes the lock 5 times (holding 2 ms)
//                                  and all must finish within 10 s (a lost
//                                  wake-up fails; the check then wakes the
//                                  sleepers itself so that it can report
//                                  instead of hanging), with no lost update.
//
// Run with
//   exercises/check.sh futex_mutex
//
// In the solution build the same checks also run on the other rungs of the
// ladder, right and wrong (exercises/instructor/futex_mutex/ladder_rungs.hpp):
// each wrong one must fail the check made for it. The starter build does not
// have that folder on its include path, so those tests are not compiled.
#include <my_futex_mutex.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exercises/support/counted_futex.hpp"
#include "tests/eventually.hpp"
#include "tests/primitives/lock_conformance.hpp"

using MyFutexMutexes = ::testing::Types<locklab::exercises::MyFutexMutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyFutexMutex, LockConformance, MyFutexMutexes);

namespace locklab::exercises {
namespace {

using namespace std::chrono_literals;
using testing::CheckResult;

FutexCalls since(const FutexCalls& before) {
  const FutexCalls now = futex_calls();
  return {now.waits - before.waits, now.wakes - before.wakes};
}

// Waits until `finished` reaches `n` (the hang detector: `bound` is generous,
// not a speed limit). If it does not, the waiters are stuck: the rescue of
// counted_futex.hpp stops futex_wait from sleeping and wakes the word's
// sleepers until they have all finished, so the caller can join them and
// report. Returns how many were stuck. If even that fails (a lock stuck
// somewhere else than in futex_wait), prints why and aborts: a failed test
// with a message beats a ctest timeout without one.
int wait_or_rescue(const std::atomic<int>& finished, int n, std::chrono::milliseconds bound, const FutexCalls& before) {
  auto all_done = [&] { return finished.load(std::memory_order_acquire) == n; };
  if (testing::eventually(all_done, bound)) return 0;
  const int stuck = n - finished.load(std::memory_order_acquire);
  begin_futex_rescue();
  const bool waited_here = since(before).waits > 0;  // else the word last waited on is not this lock's
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!all_done() && std::chrono::steady_clock::now() < deadline) {
    if (waited_here) rescue_wake_sleepers();
    std::this_thread::sleep_for(1ms);
  }
  if (!all_done()) {
    std::fprintf(stderr,
                 "futex_mutex checks: %d of %d threads stuck inside lock() and not in a counted futex_wait "
                 "(spinning forever?); cannot join them, aborting\n",
                 n - finished.load(), n);
    std::fflush(stderr);
    std::abort();
  }
  end_futex_rescue();
  return stuck;
}

// ---------------------------------------------------------------------------
// The checks (plain functions, so they can be run on the wrong rungs too)
// ---------------------------------------------------------------------------

template <class L>
CheckResult check_no_futex_call_uncontended(L& lock, int pairs, const std::string& when) {
  const FutexCalls before = futex_calls();
  for (int i = 0; i < pairs; ++i) {
    lock.lock();
    lock.unlock();
  }
  for (int i = 0; i < 1'000; ++i) {
    if (lock.try_lock()) lock.unlock();
  }
  const FutexCalls made = since(before);
  if (made.waits == 0 && made.wakes == 0) return CheckResult::pass();
  std::ostringstream why;
  why << when << pairs << " lock/unlock pairs and 1000 try_lock/unlock pairs by one thread called futex_wake "
      << made.wakes << " times and futex_wait " << made.waits
      << " times. Nobody was waiting: an uncontended unlock must not enter the kernel "
         "(step 2: a third state, 'locked, someone may sleep', and unlock wakes only from that one)";
  return CheckResult::fail(why.str());
}

// 4 threads take the lock in a loop for ~300 ms, every 16th hold sleeping
// 50 us so that waiters park; then, with every one of them gone, the
// uncontended check again.
template <class L>
CheckResult check_no_futex_call_after_contention(L& lock) {
  constexpr int kThreads = 4;
  const FutexCalls before = futex_calls();
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<std::uint64_t> made{0};
  std::uint64_t guarded = 0;  // plain, guarded by `lock`
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::uint64_t n = 0;
      for (int i = 0; i < 2'000 && !stop.load(std::memory_order_relaxed); ++i) {
        lock.lock();
        ++guarded;
        if ((i + t) % 16 == 0) std::this_thread::sleep_for(50us);
        lock.unlock();
        ++n;
      }
      made.fetch_add(n, std::memory_order_relaxed);
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  testing::eventually([&] { return finished.load(std::memory_order_acquire) == kThreads; }, 300ms);
  stop.store(true, std::memory_order_relaxed);
  const int stuck = wait_or_rescue(finished, kThreads, 10s, before);
  for (auto& th : threads) th.join();
  if (stuck != 0) {
    return CheckResult::fail("lost wake-up in the contended run: " + std::to_string(stuck) + " of " +
                             std::to_string(kThreads) + " threads were still inside lock() 10 s after the last hand-off");
  }
  if (guarded != made.load()) {
    return CheckResult::fail("mutual exclusion violated in the contended run: lost updates (" + std::to_string(guarded) +
                             " counted inside the lock, " + std::to_string(made.load()) + " critical sections)");
  }
  return check_no_futex_call_uncontended(lock, 10'000, "After a contended run, with every waiter gone, ");
}

struct SleepOptions {
  int waiters = 4;
  int rounds = 5;                                 // acquisitions per waiter after the release
  std::chrono::microseconds hold{2'000};          // each of them holds this long
  std::chrono::milliseconds park_bound{2'000};    // time for the waiters to call futex_wait
  std::chrono::milliseconds settle{20};           // and then to be asleep in it
  std::chrono::milliseconds hang_bound{10'000};   // after the release: the hang detector
};

template <class L>
CheckResult check_waiters_sleep_and_all_wake(L& lock, const SleepOptions& o = {}) {
  const FutexCalls before = futex_calls();
  lock.lock();
  std::atomic<bool> held{true};
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<int> entered_while_held{0};
  std::uint64_t guarded = 0;  // plain, guarded by `lock`
  std::vector<std::thread> threads;
  for (int t = 0; t < o.waiters; ++t) {
    threads.emplace_back([&] {
      started.fetch_add(1, std::memory_order_relaxed);
      for (int r = 0; r < o.rounds; ++r) {
        lock.lock();
        if (held.load(std::memory_order_acquire)) entered_while_held.fetch_add(1, std::memory_order_relaxed);
        ++guarded;
        std::this_thread::sleep_for(o.hold);
        lock.unlock();
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  // Hold until every waiter has called futex_wait (or park_bound has passed:
  // a lock that spins never does), then a little longer, so they sleep.
  testing::eventually([&] { return started.load(std::memory_order_relaxed) == o.waiters; });
  const bool all_parked = testing::eventually(
      [&] { return since(before).waits >= static_cast<std::uint64_t>(o.waiters); }, o.park_bound);
  if (all_parked) std::this_thread::sleep_for(o.settle);
  const FutexCalls while_held = since(before);
  const int entered = entered_while_held.load(std::memory_order_relaxed);
  held.store(false, std::memory_order_release);
  lock.unlock();
  const int stuck = wait_or_rescue(finished, o.waiters, o.hang_bound, before);
  for (auto& th : threads) th.join();

  std::ostringstream why;
  if (entered != 0) {
    why << entered << " critical sections began while the test's thread held the lock (lock() did not wait); ";
  }
  if (while_held.waits == 0) {
    why << o.waiters << " waiters behind a lock held "
        << std::chrono::duration_cast<std::chrono::milliseconds>(o.park_bound).count()
        << " ms never called futex_wait: they spun instead of sleeping (a waiter must park: step 1; and call "
           "the counted futex_wait of exercises/support/counted_futex.hpp, unqualified, not locklab::futex_wait); ";
  }
  if (stuck != 0) {
    why << "lost wake-up: " << stuck << " of " << o.waiters << " waiters were still inside lock() "
        << std::chrono::duration_cast<std::chrono::milliseconds>(o.hang_bound).count()
        << " ms after the holder released (asleep with nobody left to wake them; the check woke them itself); ";
  }
  const auto expected = static_cast<std::uint64_t>(o.waiters) * static_cast<std::uint64_t>(o.rounds);
  if (guarded != expected) {
    why << "lost updates: " << guarded << " counted inside the lock, " << expected << " critical sections; ";
  }
  const std::string s = why.str();
  return s.empty() ? CheckResult::pass() : CheckResult::fail(s);
}

// ---------------------------------------------------------------------------
// Your lock
// ---------------------------------------------------------------------------

TEST(MyFutexMutexLadder, NoFutexCallWhenUncontended) {
  MyFutexMutex lock;
  const auto r = check_no_futex_call_uncontended(lock, 100'000, "");
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(MyFutexMutexLadder, NoFutexCallOnceContentionIsOver) {
  MyFutexMutex lock;
  const auto r = check_no_futex_call_after_contention(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(MyFutexMutexLadder, WaitersSleepAndAllWake) {
  MyFutexMutex lock;
  const auto r = check_waiters_sleep_and_all_wake(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace locklab::exercises

// ---------------------------------------------------------------------------
// The checks can fail (solution build only: see the header comment)
// ---------------------------------------------------------------------------
#if __has_include(<ladder_rungs.hpp>)
#include <ladder_rungs.hpp>

namespace locklab::exercises {
namespace {

TEST(LadderChecksOnOtherRungs, StepOneAlwaysWakeFailsTheNoSyscallChecksOnly) {
  rungs::AlwaysWakeMutex a;
  const auto uncontended = check_no_futex_call_uncontended(a, 100'000, "");
  EXPECT_FALSE(uncontended.ok) << "step 1 wakes on every unlock, yet NoFutexCallWhenUncontended passed";
  EXPECT_NE(uncontended.message.find("futex_wake 101000 times"), std::string::npos) << uncontended.message;
  rungs::AlwaysWakeMutex b;
  EXPECT_FALSE(check_no_futex_call_after_contention(b).ok) << "step 1 passed NoFutexCallOnceContentionIsOver";
  rungs::AlwaysWakeMutex c;
  const auto sleeps = check_waiters_sleep_and_all_wake(c);
  EXPECT_TRUE(sleeps.ok) << "step 1 is correct and parks, yet: " << sleeps.message;
}

TEST(LadderChecksOnOtherRungs, StepTwoWithoutSpinPassesThemAll) {
  rungs::ThreeStateMutex a;
  const auto uncontended = check_no_futex_call_uncontended(a, 100'000, "");
  EXPECT_TRUE(uncontended.ok) << uncontended.message;
  rungs::ThreeStateMutex b;
  const auto after = check_no_futex_call_after_contention(b);
  EXPECT_TRUE(after.ok) << after.message;
  rungs::ThreeStateMutex c;
  const auto sleeps = check_waiters_sleep_and_all_wake(c);
  EXPECT_TRUE(sleeps.ok) << sleeps.message;
}

TEST(LadderChecksOnOtherRungs, SpinOnlyFailsWaitersSleep) {
  rungs::SpinOnlyMutex a;
  EXPECT_TRUE(check_no_futex_call_uncontended(a, 100'000, "").ok) << "a spin lock makes no futex call at all";
  rungs::SpinOnlyMutex b;
  const auto sleeps = check_waiters_sleep_and_all_wake(b);
  EXPECT_FALSE(sleeps.ok) << "a lock that never parks passed WaitersSleepAndAllWake";
  EXPECT_NE(sleeps.message.find("never called futex_wait"), std::string::npos) << sleeps.message;
}

TEST(LadderChecksOnOtherRungs, LostMarkFailsWaitersSleepWithALostWakeupAndIsRescued) {
  rungs::SleeperTakesAsOneMutex lock;
  SleepOptions o;
  o.hang_bound = 1'000ms;  // the wrong lock is known to hang: do not wait 10 s for it
  const auto sleeps = check_waiters_sleep_and_all_wake(lock, o);
  EXPECT_FALSE(sleeps.ok) << "a lock that loses its sleepers' mark passed WaitersSleepAndAllWake";
  EXPECT_NE(sleeps.message.find("lost wake-up"), std::string::npos) << sleeps.message;
}

}  // namespace
}  // namespace locklab::exercises
#endif
