// fiber_semaphore.hpp — a counting semaphore for fibers: the guard the
// virtual-threads case puts in front of a scarce resource ("a DB pool of 50
// in front of unbounded virtual threads": do not pool virtual threads, bound
// the resource; docs/case-studies.md#virtual-threads-on-io-bound-work).
//
// acquire() takes one of `permits`; when none is left the caller waits, per
// the waiting policy: by default the *fiber* suspends (ParkFiber), so ten
// thousand fibers queued for 50 connections cost ten thousand small stacks
// and no carrier. With ParkCarrier every waiter blocks its carrier: two
// waiters on two carriers stop the whole pool, which is why
// java.util.concurrent.Semaphore parks (unmounts) a virtual thread.
// There is no owner: any fiber or thread may release (the reason the
// ticket-sale semaphore herd preferred a semaphore: its acquire and release
// ran on different threads), so holding a permit never pins.
//
// The algorithm
// -------------
// primitives/'s Semaphore's: a QueuedSynchronizer
// (primitives/queued_synchronizer.hpp) with `permits` permits, unfair and
// without spinning (a spinning fiber keeps its carrier), over the waiting
// policy's lot. A release of n permits wakes one queued waiter, which hands
// the wake-up on while permits are left (AQS's propagate), so a release
// never wakes more waiters than it can serve. The previous version was a
// counter with a waiter count and a futex-style wake_one/wake_all.
//
// Guarantees: never more than `permits` holders at once (permits are taken
// only by a compare-exchange that keeps the count >= 0); no lost wake-ups;
// a waiter that times out hands a wake-up it may have absorbed on. Unfair,
// with the synchronizer's 2 ms starvation bound for a woken waiter.
// Bad input: permits or a release that would make the count exceed
// kMaxPermits (2^31 - 1, Java's limit) throws std::invalid_argument and
// changes nothing.
// Costs: uncontended acquire/release = one compare-exchange each.
// Memory orders: the synchronizer's (release on release, acquire on
// acquire), so a permit's new holder sees what its previous holder wrote.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "fibers/park_fiber.hpp"
#include "fibers/waiting_policy.hpp"
#include "primitives/queued_synchronizer.hpp"
#include "primitives/spin_policy.hpp"

namespace locklab::fibers {

template <WaitingPolicy Policy = ParkFiber>
class FiberSemaphore {
 public:
  using Clock = std::chrono::steady_clock;
  // Java's limit (Integer.MAX_VALUE); the synchronizer's own is far higher.
  static constexpr std::int64_t kMaxPermits = std::numeric_limits<std::int32_t>::max();

  // `permits` free permits to start with (<= kMaxPermits, else throws
  // std::invalid_argument); `name` (static storage) appears in pinning
  // reports when Policy pins.
  explicit FiberSemaphore(std::uint32_t permits, const char* name = "FiberSemaphore")
      : sync_(checked(permits), Fairness::kUnfair, SpinPolicy::park_only(), std::in_place, this, name) {}
  FiberSemaphore(const FiberSemaphore&) = delete;
  FiberSemaphore& operator=(const FiberSemaphore&) = delete;

  // Takes a permit, waiting (per the policy) until one is free.
  void acquire() { sync_.acquire(1); }

  // Takes a permit if one is free now; never waits.
  bool try_acquire() noexcept { return sync_.try_acquire(1); }

  // Waits at most until `deadline` / for `timeout`; true iff acquired.
  bool try_acquire_until(Clock::time_point deadline) { return sync_.acquire_until(1, deadline); }
  template <class Rep, class Period>
  bool try_acquire_for(std::chrono::duration<Rep, Period> timeout) {
    return try_acquire_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
  }

  // Returns n permits (any caller, held or not: there is no owner) and
  // wakes as many waiters as they serve. n == 0 does nothing; a count that
  // would exceed kMaxPermits throws std::invalid_argument, nothing released.
  void release(std::uint32_t n = 1) {
    if (n == 0) return;
    if (!sync_.try_release(n, kMaxPermits)) {
      throw std::invalid_argument("FiberSemaphore::release: " + std::to_string(n) +
                                  " more permits would exceed kMaxPermits");
    }
  }

  // Free permits now (a snapshot, stale at once under contention).
  std::uint32_t available() const noexcept { return static_cast<std::uint32_t>(sync_.available()); }
  // Callers queued in the slow path now (a snapshot).
  std::uint32_t waiting() const noexcept { return static_cast<std::uint32_t>(sync_.queue_length()); }

 private:
  static std::int64_t checked(std::uint32_t permits) {
    if (permits > kMaxPermits) {
      throw std::invalid_argument("FiberSemaphore: initial permits " + std::to_string(permits) +
                                  " exceed kMaxPermits");
    }
    return permits;
  }

  BasicQueuedSynchronizer<Policy> sync_;
};

}  // namespace locklab::fibers
