// fiber_lock.hpp — one lock algorithm, two ways to wait: the lab's
// `synchronized` before and after JEP 491, side by side.
//
// The algorithm
// -------------
// Drepper's three-state futex mutex ("Futexes Are Tricky", mutex #3), the
// same word FutexMutex in primitives/futex_mutex.hpp uses, without the
// spinning:
//   state | meaning
//   0     | unlocked
//   1     | locked, nobody has waited since it was taken
//   2     | locked, somebody may be waiting
// lock(): one CAS 0 -> 1. Losers exchange the word to 2 and wait while it is
// 2, retrying by exchange(2) until the exchange returns 0 (acquired, leaving
// 2 behind because other waiters may remain). unlock(): exchange to 0, and
// wake one waiter only if the old value was 2. No lost wake-ups: a waiter
// sleeps only if the word is still 2 when the policy checks it atomically
// with queuing (see waiting_policy.hpp), and an unlock in between changes the
// word. Not fair: a running fiber may barge past a woken one.
//
// Why not reuse FutexMutex itself: its futex_wait is hard-wired (as it
// should be in primitives/, which must not depend on Boost), and its spin
// phase would make the waiting policy less visible: a spinning fiber also
// keeps its carrier. The algorithm is the same; only the wait is swapped.
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
// - Destroy it only when no fiber or thread is inside lock() or unlock()
//   (e.g. after CarrierPool::join): unlock() touches the policy's wait queue
//   after publishing the release.
//
// Costs
// -----
// Uncontended: one CAS to lock, one exchange to unlock (plus, for
// ParkCarrier, the pin bookkeeping: two fiber-specific-storage lookups).
// Contended: the policy's sleep and wake (a futex system call each for
// ParkCarrier, a fiber switch each for ParkFiber) and LockStats counters.
// Memory: one cache line for the word and name, LockStats (~1 KiB until
// contended), plus the policy (ParkFiber: a fiber mutex and a queue).
//
// Memory orders
// -------------
// - The acquiring CAS and exchanges: acquire, so the critical section sees
//   everything the previous holder wrote before its release.
// - unlock's exchange: release, pairing with the above. The wake-up decision
//   needs no more: all changes of the word are read-modify-writes, totally
//   ordered, so an unlock's exchange either reads a waiter's 2 or happens
//   before the waiter's own exchange (which then returns 0: acquired).
// - A failed CAS: relaxed; the value only steers the slow path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "fibers/park_carrier.hpp"
#include "fibers/park_fiber.hpp"
#include "fibers/waiting_policy.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::fibers {

template <WaitingPolicy Policy = ParkFiber>
class FiberLock {
 public:
  using Clock = std::chrono::steady_clock;

  // `name` (static storage, e.g. a literal) appears in pinning reports.
  explicit FiberLock(const char* name = "FiberLock") noexcept : name_(name) {}
  FiberLock(const FiberLock&) = delete;
  FiberLock& operator=(const FiberLock&) = delete;

  // Blocks (per the policy) until the caller holds the lock.
  void lock() {
    std::uint32_t seen = kUnlocked;
    if (!word_.compare_exchange_strong(seen, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
      lock_slow(seen, Clock::time_point::max());
    }
    policy_.on_acquired(this, name_);
  }

  // Takes the lock if it is free right now; never waits.
  bool try_lock() noexcept {
    std::uint32_t seen = kUnlocked;
    if (!word_.compare_exchange_strong(seen, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
      return false;
    }
    policy_.on_acquired(this, name_);
    return true;
  }

  // Waits at most until `deadline` / for `timeout`; true iff acquired.
  bool try_lock_until(Clock::time_point deadline) {
    std::uint32_t seen = kUnlocked;
    if (!word_.compare_exchange_strong(seen, kLocked, std::memory_order_acquire, std::memory_order_relaxed) &&
        !lock_slow(seen, deadline)) {
      return false;
    }
    policy_.on_acquired(this, name_);
    return true;
  }
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> timeout) {
    return try_lock_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
  }

  // Releases the lock. Precondition: the caller holds it.
  void unlock() noexcept {
    policy_.on_released();
    if (word_.exchange(kUnlocked, std::memory_order_release) == kContended) {
      stats_.record_wake();
      policy_.wake_one(word_);
    }
  }

  // contended_acquires: acquires (or timeouts) that took the slow path;
  // parks: calls to the policy's wait; wakes: unlocks that woke a waiter.
  // spins is always 0 (this lock does not spin).
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }
  const char* name() const noexcept { return name_; }
  static constexpr bool pins_carrier() noexcept { return Policy::kPinsCarrier; }

 private:
  static constexpr std::uint32_t kUnlocked = 0;
  static constexpr std::uint32_t kLocked = 1;
  static constexpr std::uint32_t kContended = 2;

  // The slow path: out of line so lock() stays a CAS and a call.
  [[gnu::noinline]] bool lock_slow(std::uint32_t seen, Clock::time_point deadline) {
    if (seen != kContended) seen = word_.exchange(kContended, std::memory_order_acquire);
    while (seen != kUnlocked) {
      stats_.record_park();
      const bool in_time = policy_.wait_until(word_, kContended, deadline, this, name_);
      seen = word_.exchange(kContended, std::memory_order_acquire);
      if (!in_time && seen != kUnlocked) {
        stats_.record_contended_acquire(0);
        return false;  // the word may stay 2: one spurious wake later, harmless
      }
    }
    stats_.record_contended_acquire(0);
    return true;
  }

  alignas(kCacheLineSize) std::atomic<std::uint32_t> word_{kUnlocked};
  const char* name_;
  [[no_unique_address]] Policy policy_;
  LockStats stats_;
};

// The two configurations the pinning lab compares, by their Java names.
using FiberMutex = FiberLock<ParkFiber>;       // ReentrantLock / JDK 24 monitor
using PinningMonitor = FiberLock<ParkCarrier>;  // JDK 21 `synchronized`

}  // namespace locklab::fibers
