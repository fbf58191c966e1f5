// tas_lock.hpp — the simplest correct spin lock: test-and-set in a loop.
//
// What it guarantees
// ------------------
// Mutual exclusion, nothing more. One word, two states:
//   state   | meaning
//   false   | unlocked
//   true    | locked (by exactly one thread; the lock does not record which)
// No fairness at all: whichever core's exchange reaches the line first after
// a release wins, so a waiter can starve. No timed tries (a timed wait that
// burns a core for its whole duration is the wrong tool; use AdaptiveMutex).
//
// What is invalid
// ---------------
// - unlock() by a thread that does not hold the lock: debug builds assert
//   that the lock is held (by anyone); a non-holder unlocking a lock another
//   thread holds is NOT detected and simply releases it, breaking mutual
//   exclusion for the real holder. Release builds store `false` unchecked.
// - Recursive lock() by the holder deadlocks (spins forever).
//
// Cost and when to use it
// -----------------------
// Never, in production: it exists to be measured. Every poll is an `xchg`, a
// read-modify-write that takes the cache line exclusive, so N spinners make
// the line bounce between cores on every poll, and the holder's own release
// waits in that queue. The locks bench shows it collapsing as waiters grow;
// with more waiters than cores it also spins away whole time slices while
// the holder is preempted. Uncontended: one `xchg` to lock, one plain store
// to unlock.
//
// Memory orders
// -------------
// - lock: exchange(true, acquire). A successful exchange reads the `false`
//   written by the previous holder's release store, so everything that
//   holder did in its critical section happens-before ours.
// - unlock: store(false, release), the other half of that pair.
// - try_lock: a relaxed load first (so a try on a held lock does not take the
//   line exclusive), then the same acquire exchange.
//
// Statistics: only the slow path records (one contended acquire and the
// number of failed exchanges); the uncontended lock/unlock never touch them.
#pragma once

#include <atomic>
#include <cassert>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

class TasLock {
 public:
  TasLock() = default;
  TasLock(const TasLock&) = delete;
  TasLock& operator=(const TasLock&) = delete;

  // Blocks (spinning) until the calling thread holds the lock.
  // Precondition: the caller does not hold it.
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }

  // Takes the lock if it is free at this instant; never waits. Returns
  // whether the caller now holds it. Records no statistics.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  // Releases the lock. Precondition: the caller holds it (see "What is
  // invalid"). Never blocks, never a system call.
  void unlock() noexcept {
    assert(locked_.load(std::memory_order_relaxed) && "TasLock::unlock: lock not held");
    locked_.store(false, std::memory_order_release);
  }

  // A racy hint: true if some thread held the lock at the moment of the load.
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

  // Contended acquires and failed exchanges ("spins") since construction.
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  void lock_slow() noexcept;

  alignas(kCacheLineSize) std::atomic<bool> locked_{false};
  LockStats stats_;  // its own cache lines (StripedCounter is line-aligned)
};

}  // namespace locklab
