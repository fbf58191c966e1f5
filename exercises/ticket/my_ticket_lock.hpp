// my_ticket_lock.hpp — YOUR lock for the exercise ticket (read README.md
// first): a FIFO spin lock in two counters. Take a number, wait until it is
// served.
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the methods marked TODO. Run the checks with
//   exercises/check.sh ticket
//
// The contract (what tests/primitives/lock_conformance.hpp checks)
// -----------------------------------------------------------------
// - lock(): returns once the caller holds the lock; mutual exclusion and
//   happens-before from each unlock() to the next lock()'s return.
// - FIFO: threads acquire in the order they took their ticket. The suite
//   checks this deterministically, using queue_length() to know when each
//   thread has queued: so queue_length() must be right.
// - try_lock(): takes the lock only if it is free now AND nobody is queued;
//   never waits. (Why can a try not just take a ticket and give it back?)
// - unlock(): serves the next ticket. Precondition: the caller holds it.
// - queue_length(): threads waiting behind the holder (0 when free or when
//   only the holder is there); a racy snapshot is fine.
//
// The algorithm to write
// ----------------------
//   next_     the next ticket to hand out      (CountedAtomic<uint32_t>: a
//   serving_  the ticket allowed in right now   std::atomic a check can watch)
//   lock:   my = next_.fetch_add(1); spin (cpu_relax) until serving_ == my.
//   unlock: serving_ = serving_ + 1   (only the holder writes serving_:
//           is a load and a store then enough, or do you need an RMW?)
//   try_lock: compare-exchange next_ from s to s + 1, where s = serving_.
//   free  <=> next_ == serving_;  queue_length = next_ - serving_ - 1 (>= 0).
// Counters wrap at 2^32; unsigned arithmetic makes that harmless (if you
// compare tickets with == and !=: which comparison would break there?). A
// check starts the counters just below 2^32 with the second constructor
// (given, keep it) and queues threads across the wrap. Choose each
// memory order and say why in a comment (which load must be acquire, which
// store release, and can the fetch_add be relaxed?).
//
// Optional: a LockStats (primitives/lock_stats.hpp) and
//   LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }
// recording only slow acquires (the polls as spins) adds two checks and the
// spins-per-acquire panel of the plot.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_atomic.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {

class MyTicketLock {
 public:
  MyTicketLock() = default;
  // Starts both counters at `first_ticket` instead of 0 (free, nobody
  // queued). For the checks: MyTicketLock(UINT32_MAX - 1) reaches the wrap
  // of the counters at 2^32 within a few acquisitions.
  explicit MyTicketLock(std::uint32_t first_ticket) noexcept : next_(first_ticket), serving_(first_ticket) {}
  MyTicketLock(const MyTicketLock&) = delete;
  MyTicketLock& operator=(const MyTicketLock&) = delete;

  // Takes a ticket and spins until it is served. FIFO.
  void lock() noexcept {
    // TODO(you)
  }

  // Takes the lock only if it is free and nobody waits; never waits.
  bool try_lock() noexcept {
    // TODO(you)
    return true;  // the starter always says yes (false would make std::lock spin forever)
  }

  // Serves the next ticket. Precondition: the caller holds the lock.
  void unlock() noexcept {
    // TODO(you)
  }

  // Threads waiting behind the holder (a snapshot).
  std::int64_t queue_length() const noexcept {
    // TODO(you)
    return 0;
  }

 private:
  // On separate cache lines: arrivals (fetch_add on next_) should not
  // invalidate the line every waiter polls. CountedAtomic is std::atomic that
  // a check can watch (exercises/support/counted_atomic.hpp): keep the type.
  alignas(kCacheLineSize) CountedAtomic<std::uint32_t> next_{0};
  alignas(kCacheLineSize) CountedAtomic<std::uint32_t> serving_{0};
};

}  // namespace locklab::exercises
