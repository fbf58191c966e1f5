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
// permits_ counts free permits and is the word waiters sleep on (while it
// is 0); waiters_ counts fibers in the slow path so that release() makes a
// wake-up call only when somebody may be asleep. That is a Dekker handshake:
//   waiter:   waiters_ += 1 (seq_cst);  re-check permits_ (seq_cst) and sleep
//             only while it is 0 (the policy's atomic check)
//   releaser: permits_ += n (seq_cst);  if waiters_ (seq_cst) > 0: wake
// In the single total order of seq_cst operations either the releaser's read
// of waiters_ comes after the waiter's increment (it wakes), or its permits_
// increment comes before the waiter's check (the waiter does not sleep).
// Weaker orders would let both miss each other: store-load reordering.
// Not fair: a running fiber may take a permit ahead of a woken one.
//
// Guarantees: never more than `permits` holders at once (permits_ never goes
// below 0: taken only by a CAS from a positive value); no lost wake-ups; a
// timed-out waiter re-checks once, so a wake-up it absorbed is not lost.
// Costs: uncontended acquire/release = one CAS / one fetch_add + one load.
// Memory orders: see the handshake; the fast-path CAS is acquire and the
// release's fetch_add (seq_cst) includes release, so a permit's new holder
// sees what its previous holder wrote.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "fibers/park_fiber.hpp"
#include "fibers/waiting_policy.hpp"

namespace locklab::fibers {

template <WaitingPolicy Policy = ParkFiber>
class FiberSemaphore {
 public:
  using Clock = std::chrono::steady_clock;

  // `permits` free permits to start with; `name` (static storage) appears in
  // pinning reports when Policy pins.
  explicit FiberSemaphore(std::uint32_t permits, const char* name = "FiberSemaphore") noexcept
      : permits_(permits), name_(name) {}
  FiberSemaphore(const FiberSemaphore&) = delete;
  FiberSemaphore& operator=(const FiberSemaphore&) = delete;

  // Takes a permit, waiting (per the policy) until one is free.
  void acquire() {
    if (!try_acquire()) acquire_slow(Clock::time_point::max());
  }

  // Takes a permit if one is free now; never waits.
  bool try_acquire() noexcept {
    std::uint32_t free = permits_.load(std::memory_order_relaxed);
    while (free > 0) {
      if (permits_.compare_exchange_weak(free, free - 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Waits at most until `deadline` / for `timeout`; true iff acquired.
  bool try_acquire_until(Clock::time_point deadline) { return try_acquire() || acquire_slow(deadline); }
  template <class Rep, class Period>
  bool try_acquire_for(std::chrono::duration<Rep, Period> timeout) {
    return try_acquire_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
  }

  // Returns n permits (any caller, held or not: there is no owner) and
  // wakes waiters if any may sleep.
  void release(std::uint32_t n = 1) {
    permits_.fetch_add(n, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) {
      if (n == 1) {
        policy_.wake_one(permits_);
      } else {
        policy_.wake_all(permits_);
      }
    }
  }

  // Free permits now (a snapshot, stale at once under contention).
  std::uint32_t available() const noexcept { return permits_.load(std::memory_order_relaxed); }
  // Callers in the slow path now (a snapshot).
  std::uint32_t waiting() const noexcept { return waiters_.load(std::memory_order_relaxed); }

 private:
  [[gnu::noinline]] bool acquire_slow(Clock::time_point deadline) {
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool acquired = false;
    for (;;) {
      std::uint32_t free = permits_.load(std::memory_order_seq_cst);
      if (free > 0) {
        if (permits_.compare_exchange_weak(free, free - 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
          acquired = true;
          break;
        }
        continue;
      }
      if (!policy_.wait_until(permits_, 0, deadline, this, name_)) {
        acquired = try_acquire();  // once more: we may have absorbed a wake-up
        break;
      }
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return acquired;
  }

  std::atomic<std::uint32_t> permits_;
  std::atomic<std::uint32_t> waiters_{0};
  const char* name_;
  [[no_unique_address]] Policy policy_;
};

}  // namespace locklab::fibers
