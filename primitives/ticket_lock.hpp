// ticket_lock.hpp — the bakery algorithm in two counters: take a number,
// wait until it is served. FIFO by construction.
//
// What it guarantees
// ------------------
// Mutual exclusion and FIFO order: threads acquire in the order their
// fetch_add on `next_` took effect, so no thread starves (while the holder
// keeps releasing). State: two 32-bit counters,
//   next_ - serving_ | meaning
//   0                | unlocked
//   1                | locked, nobody waiting
//   k > 1            | locked, k - 1 threads waiting (queue_length())
// Counters wrap modulo 2^32, which is correct while fewer than 2^32 threads
// wait at once.
// No timed tries: a ticket, once taken, cannot be given back (every later
// ticket would wait for it forever), so try_lock only takes a ticket that
// would be served at once.
//
// What is invalid
// ---------------
// unlock() by a thread that does not hold the lock advances `serving_` past a
// ticket nobody holds: the lock is corrupted (two threads may then hold it,
// or a later ticket is skipped and its owner spins forever). Debug builds
// assert the lock is held (next_ != serving_); they cannot tell by whom.
// Recursive lock() deadlocks.
//
// Cost and when to use it
// -----------------------
// Uncontended: one `lock xadd` to lock, one plain store to unlock. Fairness
// is its whole point, and its weakness on an oversubscribed machine: the
// lock is handed to the NEXT ticket, and if that thread is not running
// (more waiters than cores) nobody can take the lock until the scheduler
// runs it: a hand-off can cost a time slice (milliseconds). The locks bench
// shows this cliff from 4 waiters on 2 cores. All waiters still poll one
// line (`serving_`), so a release invalidates N copies (MCS fixes that).
//
// Memory orders
// -------------
// - lock: next_.fetch_add(1, relaxed) only takes a number; it orders nothing.
//   The wait is serving_.load(acquire) until it equals our ticket: that load
//   reads the release store of the previous holder's unlock, so its critical
//   section happens-before ours.
// - unlock: only the holder writes serving_, so load(relaxed) + store(+1,
//   release) is a complete increment; release publishes the critical section.
// - try_lock: CAS next_ from s to s + 1 where s = serving_ (acquire load);
//   the acquire on serving_ is the synchronisation, the CAS only reserves
//   the ticket (relaxed is enough for it).
// `next_` and `serving_` sit on separate cache lines so arrivals
// (fetch_add on next_) do not invalidate the line every waiter polls.
//
// Statistics: slow path only; spins count polls of serving_.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

class TicketLock {
 public:
  TicketLock() = default;
  TicketLock(const TicketLock&) = delete;
  TicketLock& operator=(const TicketLock&) = delete;

  // Takes a ticket and waits (spinning) until it is served. FIFO.
  // Precondition: the caller does not hold the lock.
  void lock() noexcept {
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    if (serving_.load(std::memory_order_acquire) == ticket) return;
    lock_slow(ticket);
  }

  // Takes the lock only if it is free now (no waiter is queued); never waits.
  bool try_lock() noexcept {
    std::uint32_t s = serving_.load(std::memory_order_acquire);
    return next_.compare_exchange_strong(s, s + 1, std::memory_order_relaxed, std::memory_order_relaxed);
  }

  // Serves the next ticket. Precondition: the caller holds the lock.
  void unlock() noexcept {
    const std::uint32_t s = serving_.load(std::memory_order_relaxed);
    assert(next_.load(std::memory_order_relaxed) != s && "TicketLock::unlock: lock not held");
    serving_.store(s + 1, std::memory_order_release);
  }

  // Threads waiting behind the holder at the moment of the loads (a racy
  // snapshot; exact when nobody arrives or leaves meanwhile).
  std::int64_t queue_length() const noexcept {
    const std::uint32_t s = serving_.load(std::memory_order_relaxed);
    const std::uint32_t n = next_.load(std::memory_order_relaxed);
    const auto waiting = static_cast<std::int32_t>(n - s) - 1;
    return waiting > 0 ? waiting : 0;
  }
  bool is_locked() const noexcept {
    return next_.load(std::memory_order_relaxed) != serving_.load(std::memory_order_relaxed);
  }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  void lock_slow(std::uint32_t ticket) noexcept;

  alignas(kCacheLineSize) std::atomic<std::uint32_t> next_{0};
  alignas(kCacheLineSize) std::atomic<std::uint32_t> serving_{0};
  LockStats stats_;
};

}  // namespace locklab
