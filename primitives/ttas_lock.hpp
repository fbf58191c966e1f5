// ttas_lock.hpp — test-and-test-and-set: spin on a plain load, and try the
// exchange only when the lock looks free.
//
// What it guarantees
// ------------------
// Mutual exclusion; same two states as TasLock (false = unlocked, true =
// locked by one unrecorded thread). No fairness: after a release every
// spinner sees `false` at about the same time and the first exchange wins;
// a waiter can starve. No timed tries (see tas_lock.hpp).
//
// What is invalid
// ---------------
// unlock() by a non-holder: debug builds assert the lock is held (by anyone);
// a non-holder releasing a lock another thread holds is not detected and
// breaks mutual exclusion. Recursive lock() deadlocks.
//
// Cost and when to use it
// -----------------------
// The fix for TasLock's line bouncing: while the lock is held, each spinner
// reads its own shared copy of the line and generates no traffic, and
// `pause` (cpu_relax) between polls keeps the loop from flooding the
// pipeline. A release still invalidates every copy and starts a stampede of
// exchanges (O(N) line transfers per hand-off), which BackoffLock damps and
// MCS removes. Like every pure spin lock it collapses when waiters outnumber
// cores: a preempted holder makes every spinner burn its whole time slice.
// Uncontended: one `xchg` to lock, one plain store to unlock.
//
// Memory orders
// -------------
// - the polling load: relaxed. It publishes nothing and decides nothing; it
//   only tells us when the acquire exchange is worth trying.
// - lock/try_lock: exchange(true, acquire) pairs with unlock's
//   store(false, release): the previous critical section happens-before ours.
//
// Statistics: slow path only (one contended acquire, polls counted as spins).
#pragma once

#include <atomic>
#include <cassert>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

class TtasLock {
 public:
  TtasLock() = default;
  TtasLock(const TtasLock&) = delete;
  TtasLock& operator=(const TtasLock&) = delete;

  // Blocks (spinning) until the calling thread holds the lock.
  // Precondition: the caller does not hold it.
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }

  // Takes the lock if it is free at this instant; never waits.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  // Releases the lock. Precondition: the caller holds it. Never blocks.
  void unlock() noexcept {
    assert(locked_.load(std::memory_order_relaxed) && "TtasLock::unlock: lock not held");
    locked_.store(false, std::memory_order_release);
  }

  // A racy hint: true if some thread held the lock at the moment of the load.
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  void lock_slow() noexcept;

  alignas(kCacheLineSize) std::atomic<bool> locked_{false};
  LockStats stats_;
};

}  // namespace locklab
