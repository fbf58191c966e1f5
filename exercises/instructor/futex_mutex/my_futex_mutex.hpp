// my_futex_mutex.hpp — REFERENCE SOLUTION of the exercise futex_mutex
// (instructor folder: keep it away from students until they have tried).
// The student's starter is exercises/futex_mutex/my_futex_mutex.hpp; the
// contract is stated there, the three steps in its README. This is step 3:
// Drepper's three states plus a bounded spin before parking. The lab's own
// FutexMutex (primitives/futex_mutex.hpp) is the same park phase with an
// adaptive spin budget, a direct hand-off once per ms and statistics of
// every kind; AdaptiveMutex (primitives/adaptive_mutex.hpp on
// primitives/queued_synchronizer.hpp) is the step after: waiters sleep on
// their own word in the parking lot, not on the lock word.
//
// The word
// --------
//   0  unlocked
//   1  locked, and no thread has gone to sleep on the word since it was taken
//   2  locked, and some thread may be asleep in futex_wait(state_, 2)
// - lock(): one CAS 0 -> 1 (the fast path). Failing that, spin: poll the
//   word up to kSpinPolls times while it reads 1, trying the CAS again each
//   time it reads 0. Then park: exchange(2); if that returned 0 the lock is
//   ours (taken in state 2), else futex_wait(state_, 2) and exchange again.
// - unlock(): exchange(0); only if it returned 2 does it call futex_wake_one.
//   So an uncontended pair is one CAS and one exchange, no system call:
//   what step 1 (unlock always wakes) pays a syscall for on every unlock.
// - try_lock(): one CAS 0 -> 1.
//
// No lost wake-ups
// ----------------
// A thread sleeps only in futex_wait(state_, 2), and the kernel compares the
// word with 2 and queues the thread in one step (under its own lock for the
// word), so there is no window between "the word is 2" and "asleep": an
// unlock that writes 0 before the compare makes the wait return at once;
// one after it finds the thread queued. The word leaves 2 only through an
// unlock's exchange(0), which read 2 and therefore wakes one sleeper. A
// thread that has slept once takes the lock only by exchange(2), never by
// CAS 0 -> 1, so the word goes back to 2 whenever a sleeper may remain: the
// woken thread either takes the lock in state 2 (its unlock wakes the next)
// or finds it taken again (by a spinner's CAS 0 -> 1, which wrote 1) and
// rewrites 2 before it sleeps. The price is Drepper's: one futex_wake too
// many after the last sleeper has left (nobody counts the sleepers; that
// would cost an atomic per park).
//
// Why spin at all, and why only while the word reads 1
// ----------------------------------------------------
// A park and a wake cost two context switches and a futex_wake system call
// (microseconds); a critical section of a few hundred nanoseconds is over
// long before. So a waiter first polls, kSpinPolls times with cpu_relax()
// (primitives/cpu_relax.hpp) between polls: ~20 ns a poll on the lab machine
// (FutexMutex's figure), ~2 us in all. It stops
// early when the word reads 2: some thread has already spun out its polls
// and sleeps, so the holder is slow, and a spinner would only take a core
// from it (and barge past the sleeper).
//
// Memory orders
// -------------
// - Every operation that can take the lock is acquire: the CAS 0 -> 1
//   (fast path, spin, try_lock) and the exchange(2). The one that succeeds
//   reads the 0 written by the previous holder's release exchange, so that
//   holder's critical section happens-before ours. An exchange(2) that
//   returns 1 or 2 takes nothing; its acquire is merely unused.
// - unlock's exchange(0) is release: the other half of that pair. It need
//   not be acquire: the value it returns only decides whether to wake, and
//   a wake publishes nothing (the woken thread re-reads the word with its
//   own acquiring exchange).
// - The polls of the spin are relaxed, and so is every failed CAS: they
//   only decide when to try, and the acquiring CAS is what synchronises.
//   While the lock is held, each spinner reads its own shared copy of the
//   line and sends no traffic; one CAS per 0 seen takes the line exclusive.
// - futex_wait's compare is done by the kernel and orders nothing we rely
//   on: after it returns we re-read the word with the exchange.
//
// Statistics (optional in the exercise): only slow paths record, as in every
// lock of the lab: a contended acquire and its polls, a park per futex_wait
// that did not return at once, a wake per futex_wake_one.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_futex.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::exercises {

class MyFutexMutex {
 public:
  // Polls before parking (step 3); ~20 ns each with cpu_relax().
  static constexpr std::int64_t kSpinPolls = 100;

  MyFutexMutex() = default;
  MyFutexMutex(const MyFutexMutex&) = delete;
  MyFutexMutex& operator=(const MyFutexMutex&) = delete;

  void lock() noexcept {
    std::uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;  // uncontended
    }
    lock_contended();
  }

  bool try_lock() noexcept {
    std::uint32_t expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire, std::memory_order_relaxed);
  }

  void unlock() noexcept {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kLockedWithSleepers) {
      stats_.record_wake();
      futex_wake_one(state_);  // the counted wrapper (exercises/support/counted_futex.hpp)
    }
  }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  static constexpr std::uint32_t kUnlocked = 0;
  static constexpr std::uint32_t kLocked = 1;
  static constexpr std::uint32_t kLockedWithSleepers = 2;

  void lock_contended() noexcept {
    std::int64_t polls = 0;
    // Step 3: spin while the word says "locked, nobody asleep".
    for (; polls < kSpinPolls; ++polls) {
      std::uint32_t seen = state_.load(std::memory_order_relaxed);
      if (seen == kLockedWithSleepers) break;
      if (seen == kUnlocked &&
          state_.compare_exchange_strong(seen, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
        stats_.record_contended_acquire(polls);
        return;
      }
      cpu_relax();
    }
    // Step 2: mark "may have sleepers" and sleep until the mark took the lock.
    while (state_.exchange(kLockedWithSleepers, std::memory_order_acquire) != kUnlocked) {
      if (futex_wait(state_, kLockedWithSleepers) != FutexWaitResult::kValueChanged) stats_.record_park();
    }
    stats_.record_contended_acquire(polls);
  }

  alignas(kCacheLineSize) std::atomic<std::uint32_t> state_{kUnlocked};
  LockStats stats_;  // slow paths only; its counters start on lines of their own
};

}  // namespace locklab::exercises
