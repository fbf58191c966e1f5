// ladder_rungs.hpp — the other rungs of the exercise futex_mutex, right and
// wrong, on which my_futex_mutex_test.cpp proves that its ladder checks can
// fail (the way tests/primitives/broken_lock_test.cpp proves it for the
// conformance suite). Instructor folder: only the solution build has this
// folder on its include path, so only there does the test file find this
// header (__has_include) and run the checks on these locks as well.
//
//   AlwaysWakeMutex        step 1: two states, unlock always wakes. Correct
//                          (it passes the conformance suite), but a system
//                          call per unlock: must fail NoFutexCallWhenUncontended
//                          and NoFutexCallOnceContentionIsOver.
//   ThreeStateMutex        step 2: Drepper's three states, no spin. Must pass
//                          every ladder check (the checks do not insist on
//                          step 3's spin, which shows on the bench, not in a
//                          test).
//   SpinOnlyMutex          wrong: a test-and-test-and-set spin lock on the
//                          word that never parks. Passes the conformance
//                          suite and the no-syscall checks; must fail
//                          WaitersSleepAndAllWake ("never called futex_wait").
//   SleeperTakesAsOneMutex wrong: three states, but a woken sleeper takes
//                          the lock with CAS 0 -> 1 instead of exchange(2),
//                          so the "may have sleepers" mark is lost while
//                          others still sleep (why primitives/futex_mutex.hpp
//                          takes the lock by exchange(2) once it has parked).
//                          Must fail WaitersSleepAndAllWake with a lost
//                          wake-up, and the check's rescue must let it finish.
// All of them call the counted futex wrappers, as a student's lock does.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_futex.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises::rungs {

// What every rung shares: the word (0 = unlocked) and a try_lock() that is
// one compare-exchange 0 -> 1. The rungs differ only in lock() and unlock().
class FutexWord {
 public:
  bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }

 protected:
  std::atomic<std::uint32_t> state_{0};
};

class AlwaysWakeMutex : public FutexWord {
 public:
  void lock() noexcept {
    std::uint32_t expected = 0;
    while (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      futex_wait(state_, 1);
      expected = 0;
    }
  }
  void unlock() noexcept {
    state_.store(0, std::memory_order_release);
    futex_wake_one(state_);  // whether anyone sleeps or not
  }
};

class ThreeStateMutex : public FutexWord {
 public:
  void lock() noexcept {
    std::uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    while (state_.exchange(2, std::memory_order_acquire) != 0) futex_wait(state_, 2);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) futex_wake_one(state_);
  }
};

class SpinOnlyMutex : public FutexWord {
 public:
  void lock() noexcept {
    for (;;) {
      std::uint32_t expected = 0;
      if (state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
      while (state_.load(std::memory_order_relaxed) != 0) cpu_relax();
    }
  }
  void unlock() noexcept { state_.store(0, std::memory_order_release); }
};

class SleeperTakesAsOneMutex : public FutexWord {
 public:
  void lock() noexcept {
    std::uint32_t seen = 0;
    while (!state_.compare_exchange_strong(seen, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      // Mark "may have sleepers" (1 -> 2), sleep, then try 0 -> 1 again: the
      // bug. Taking the word as 1 erases the mark of the others asleep.
      if (seen == 1) state_.compare_exchange_strong(seen, 2, std::memory_order_relaxed, std::memory_order_relaxed);
      futex_wait(state_, 2);
      seen = 0;
    }
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) futex_wake_one(state_);
  }
};

}  // namespace locklab::exercises::rungs
