// fiber_lock.hpp — one lock algorithm, two ways to wait: the lab's
// `synchronized` before and after JEP 491, side by side.
//
// The algorithm
// -------------
// primitives/'s, unchanged: a QueuedSynchronizer
// (primitives/queued_synchronizer.hpp) with one permit, unfair, the one
// under AdaptiveMutex and ReentrantLock. A word with the permit and exact
// "somebody is queued" / "a woken successor exists" bits, arrivals that
// barge, at most one woken waiter at a time, and the 2 ms starvation
// hand-off to the head. Only two things differ:
// - the waiting policy supplies the lot the waiters sleep in (a fiber queue
//   of the lock's own, or the process-wide ParkingLot that blocks the OS
//   thread);
// - no spinning (SpinPolicy::park_only()): a spinning fiber keeps its
//   carrier, and on one carrier the holder it waits for cannot even run
//   until it stops. Waiting is therefore purely the policy's, which is
//   the point of the experiment.
// The previous version ran Drepper's three-state futex mutex here (as
// FutexMutex in primitives/futex_mutex.hpp still does): every release with
// a waiter woke one, even when a woken waiter was already on its way.
//
// The waiting policy (the one-line change)
// ----------------------------------------
//   using Lock = FiberLock<ParkFiber>;    // the fiber suspends, carrier free
//   using Lock = FiberLock<ParkCarrier>;  // the carrier blocks: pinning
// FiberLock<ParkCarrier> is JDK 21's monitor on a virtual thread: waiting
// for it blocks the carrier, and holding it pins the fiber, so blocking I/O
// inside (VirtualThread::sleep_for) blocks the carrier too; both are
// reported to the pool's PinningDetector. FiberLock<ParkFiber> is
// ReentrantLock on a virtual thread, or JDK 24's monitor (JEP 491).
//
// Guarantees
// ----------
// - Mutual exclusion among fibers on any carriers and plain threads alike.
// - Correct when the holder migrates: the word records no owner thread, so a
//   FiberLock<ParkFiber> held across a suspension may be released on another
//   carrier than the one that took it (the test checks exactly this).
//   FiberLock<ParkCarrier>'s holder never suspends by design (it is pinned).
// - Not reentrant, no owner check: unlocking a lock you do not hold breaks
//   it, as with std::mutex.
// - Unfair with a bound: a queued waiter may be overtaken by running
//   fibers, but once woken, newcomers stop barging after 2 ms (the
//   synchronizer's starvation mode).
// - Destroy it only when no fiber or thread is inside lock() or unlock()
//   (e.g. after CarrierPool::join): unlock() touches the lot after
//   publishing the release.
//
// Costs
// -----
// Uncontended: one CAS to lock, one CAS to unlock (plus, for ParkCarrier,
// the pin bookkeeping: two fiber-specific-storage lookups).
// Contended: the policy's sleep and wake (a futex system call each for
// ParkCarrier, a fiber switch each for ParkFiber), at most one wake per
// release and none while a woken waiter is on its way, and LockStats
// counters. Memory: the synchronizer (two cache lines and LockStats, ~1.2
// KiB), plus the policy (ParkFiber: a fiber mutex and a list head).
//
// Memory orders
// -------------
// The synchronizer's: the acquiring CAS is acquire, the releasing CAS
// release, so the critical section sees everything the previous holder
// wrote; the wake-up bits are ordered by the lot's lock
// (queued_synchronizer.hpp, "Orderings").
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>

#include "fibers/park_carrier.hpp"
#include "fibers/park_fiber.hpp"
#include "fibers/waiting_policy.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"
#include "primitives/spin_policy.hpp"

namespace locklab::fibers {

template <WaitingPolicy Policy = ParkFiber>
class FiberLock {
 public:
  using Clock = std::chrono::steady_clock;

  // `name` (static storage, e.g. a literal) appears in pinning reports.
  explicit FiberLock(const char* name = "FiberLock")
      : name_(name), sync_(1, Fairness::kUnfair, SpinPolicy::park_only(), std::in_place, this, name) {}
  FiberLock(const FiberLock&) = delete;
  FiberLock& operator=(const FiberLock&) = delete;

  // Blocks (per the policy) until the caller holds the lock.
  void lock() {
    sync_.acquire(1);
    sync_.lot().on_acquired();
  }

  // Takes the lock if it is free right now (and nobody woken has waited
  // 2 ms for it); never waits.
  bool try_lock() noexcept {
    if (!sync_.try_acquire(1)) return false;
    sync_.lot().on_acquired();
    return true;
  }

  // Waits at most until `deadline` / for `timeout`; true iff acquired. A
  // deadline already past is one try_lock().
  bool try_lock_until(Clock::time_point deadline) {
    if (!sync_.acquire_until(1, deadline)) return false;
    sync_.lot().on_acquired();
    return true;
  }
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> timeout) {
    return try_lock_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
  }

  // Releases the lock. Precondition: the caller holds it.
  void unlock() noexcept {
    sync_.lot().on_released();
    sync_.release(1);
  }

  // contended_acquires: acquires (or timeouts) that took the slow path;
  // parks: sleeps in the lot; wakes: releases that woke a waiter.
  // spins is always 0 (this lock does not spin).
  LockStatsSnapshot stats() const noexcept { return sync_.stats(); }
  // Fibers and threads queued for the lock now (a snapshot).
  std::int64_t queue_length() const noexcept { return sync_.queue_length(); }
  const char* name() const noexcept { return name_; }
  static constexpr bool pins_carrier() noexcept { return Policy::kPinsCarrier; }

 private:
  const char* name_;
  BasicQueuedSynchronizer<Policy> sync_;
};

// The two configurations the pinning lab compares, by their Java names.
using FiberMutex = FiberLock<ParkFiber>;       // ReentrantLock / JDK 24 monitor
using PinningMonitor = FiberLock<ParkCarrier>;  // JDK 21 `synchronized`

}  // namespace locklab::fibers
