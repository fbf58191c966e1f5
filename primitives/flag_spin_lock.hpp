// flag_spin_lock.hpp — what TasLock, TtasLock and BackoffLock have in common:
// one atomic<bool>, the same fast paths, the same rules, the same statistics.
// They differ only in how a thread that found the lock taken waits for it,
// and each of their headers is about exactly that.
//
// The shared part
// ---------------
//   state   | meaning
//   false   | unlocked
//   true    | locked (by exactly one thread; the lock does not record which)
// - lock(): one exchange(true). If it returned false the caller holds the
//   lock; otherwise Derived::acquire_contended(word) waits in its own way
//   until *its* exchange returns false, and returns how many polls or pauses
//   it spent, which the statistics record (the slow path only: an
//   uncontended lock/unlock never touches them).
// - try_lock(): a relaxed load first (a try on a held lock then does not take
//   the line exclusive), then the same exchange. Never waits.
// - unlock(): store(false).
// No fairness, no timed tries (a timed wait that burns a core for its whole
// duration is the wrong tool; use AdaptiveMutex).
//
// What is invalid
// ---------------
// - unlock() by a thread that does not hold the lock: debug builds assert
//   that the lock is held (by anyone); a non-holder unlocking a lock another
//   thread holds is NOT detected and simply releases it, breaking mutual
//   exclusion for the real holder. Release builds store `false` unchecked.
// - Recursive lock() by the holder deadlocks (spins forever).
//
// Memory orders
// -------------
// - Every exchange that can take the lock is acquire: a successful one reads
//   the `false` written by the previous holder's release store, so that
//   holder's critical section happens-before ours. unlock's store is the
//   release half of the pair.
// - Loads that only decide whether to try (try_lock's first look, the
//   polling loads of TTAS and backoff) are relaxed: they publish nothing.
//
// Writing your own: derive `class MyLock : public FlagSpinLock<MyLock>`,
// befriend the base, and define
//   static std::int64_t acquire_contended(std::atomic<bool>& locked) noexcept;
// which returns once its own exchange(true, acquire) returned false.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

template <class Derived>
class FlagSpinLock {
 public:
  FlagSpinLock(const FlagSpinLock&) = delete;
  FlagSpinLock& operator=(const FlagSpinLock&) = delete;

  // Blocks (spinning, the Derived way) until the calling thread holds the
  // lock. Precondition: the caller does not hold it.
  void lock() noexcept {
    if (locked_.exchange(true, std::memory_order_acquire)) [[unlikely]] {
      stats_.record_contended_acquire(Derived::acquire_contended(locked_));
    }
  }

  // Takes the lock if it is free at this instant; never waits. Returns
  // whether the caller now holds it. Records no statistics.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  // Releases the lock. Precondition: the caller holds it (see "What is
  // invalid"). Never blocks, never a system call.
  void unlock() noexcept {
    assert(locked_.load(std::memory_order_relaxed) && "spin lock unlock(): lock not held");
    locked_.store(false, std::memory_order_release);
  }

  // A racy hint: true if some thread held the lock at the moment of the load.
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

  // Contended acquires and the polls/pauses they spent, since construction.
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 protected:
  FlagSpinLock() = default;
  ~FlagSpinLock() = default;

 private:
  alignas(kCacheLineSize) std::atomic<bool> locked_{false};
  LockStats stats_;  // its own cache lines (StripedCounter is line-aligned)
};

}  // namespace locklab
