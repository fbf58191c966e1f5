// adaptive_mutex.hpp — locklab's general-purpose mutex: a waiter sleeps in
// the ParkingLot, at most one woken thread is awake, and only it spins (an
// adaptive budget) before it sleeps again. The third step of the ladder
//   3-state futex mutex  -> adaptive spinning     -> parking lot
//   FutexMutex(park-only)   FutexMutex(3-state)      AdaptiveMutex
// (primitives/futex_mutex.hpp has the first two). It is a
// QueuedSynchronizer with one permit in unfair mode, the algorithm under
// ReentrantLock and Semaphore too (primitives/queued_synchronizer.hpp has
// the essay and the argument); this file adds the mutex vocabulary.
//
// Why the step from FutexMutex
// ----------------------------
// FutexMutex sleeps in futex_wait on its own lock word. Under contention
// that word changes every few hundred nanoseconds, so a waiter's futex_wait
// mostly returns at once; the waiter re-arms the word ("may have
// sleepers"), and the next release pays a futex_wake for a thread that is
// not asleep (wakes_per_acquire 0.15-0.36 at cs_ns:200 with parks_per_acquire
// ~0 in the reference run, and cpu_per_wall ~2: both cores busy, one of them
// waking and spinning). Here a waiter sleeps on its own Parker, which no lock
// traffic touches; the word says exactly whether anybody is queued and
// whether a successor is already awake, so a release wakes only a sleeper,
// and only when nobody else is coming.
//
// What it guarantees
// ------------------
//   state (permits, flags)        lock()                    unlock()
//   free (1)                      takes it: one fetch_sub   invalid
//   held, nobody waiting (0)      queues (no spin)          one fetch_add -> free
//   held, threads queued          queues (no spin)          fetch_add; wakes the
//                                                           head unless one is awake
// Only the thread woken from the queue spins (its adaptive budget) before
// it sleeps again; SpinPolicy::newcomers_spin says why newcomers do not.
// - Mutual exclusion; unlock() happens-before the next lock() that takes it.
// - No lost wake-ups; no system call, no lot access and no statistics on an
//   uncontended lock() or unlock().
// - Fairness: barging. A running thread may take the lock ahead of queued
//   ones (that keeps the lock busy while a woken thread is being
//   scheduled); queued threads are served in FIFO order, and the woken head
//   keeps its place. Bound: once the head has been awake for 2 ms without
//   getting the lock, newcomers stop barging until it has (starvation mode).
//   Until then the woken head is polite: it leaves the lock to a running
//   thread that keeps re-taking it, so that turns last (queued_synchronizer.hpp,
//   "A polite successor").
//
// What is invalid
// ---------------
// unlock() of a lock that is not held (an assert in debug builds; in release
// builds it frees a permit that was never taken, and the next two lock()s
// both succeed: undefined, as for std::mutex); unlock() by a thread that does
// not hold it (the owner is not recorded: use ReentrantLock for that check);
// recursive lock() (deadlock); destroying it while a thread waits on it.
//
// Cost: one fetch_sub per uncontended lock() and one fetch_add per
// unlock(). 8 bytes of state on a cache line of its own, plus the spin
// budget and LockStats (~1.5 KiB) off that line.
#pragma once

#include <cassert>
#include <chrono>
#include <cstdint>

#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"
#include "primitives/spin_policy.hpp"
#include "primitives/timed_try_lock.hpp"

namespace locklab {

class AdaptiveMutex : public TimedTryLock<AdaptiveMutex> {
 public:
  explicit AdaptiveMutex(SpinPolicy policy = SpinPolicy::adaptive()) noexcept
      : sync_(1, Fairness::kUnfair, policy) {}
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  // Blocks until the caller holds the lock. Pre: the caller does not hold it.
  // The first try is one fetch_sub, not a load and a compare-exchange that
  // waits for it (QueuedSynchronizer::try_acquire_one_by_sub; a try that
  // finds the lock taken gives the permit back with a fetch_add). On the
  // reference Intel VM that took the uncontended pair from 79 to 94 M/s, and
  // 4-16 waiters with empty sections from 76 to 88-90 M/s.
  void lock() noexcept {
    if (!sync_.try_acquire_one_by_sub()) sync_.acquire(1);
  }

  // Takes the lock if a newcomer may take it now (free, and no starving
  // successor); never waits, never a system call, records no statistics.
  // Like std::mutex::try_lock it may fail spuriously: while another thread's
  // first try in lock() is giving back a permit it found taken, the lock
  // reads as held for those few nanoseconds.
  bool try_lock() noexcept { return sync_.try_acquire(1); }

  // try_lock_for(d), try_lock_until(t): from TimedTryLock
  // (primitives/timed_try_lock.hpp), on try_lock() and lock_slow_until().

  // Releases the lock; wakes one queued thread only if one is queued and no
  // successor is awake. Pre: the caller holds it.
  void unlock() noexcept {
    // <= 0: other threads' first tries in lock() may hold it below 0 for a moment.
    assert(sync_.available() <= 0 && "AdaptiveMutex::unlock: lock not held");
    sync_.release(1);
  }

  // A racy hint: true if the lock was held at the moment of the load.
  bool is_locked() const noexcept { return sync_.available() <= 0; }
  // The adaptive spin budget, in polls (for tests and teaching).
  std::uint32_t spin_budget() const noexcept { return sync_.spin_budget(); }
  const SpinPolicy& policy() const noexcept { return sync_.policy(); }
  LockStatsSnapshot stats() const noexcept { return sync_.stats(); }

 private:
  friend class TimedTryLock<AdaptiveMutex>;
  bool lock_slow_until(std::chrono::steady_clock::time_point deadline) noexcept {
    return sync_.acquire_until(1, deadline);
  }

  QueuedSynchronizer sync_;
};

}  // namespace locklab
