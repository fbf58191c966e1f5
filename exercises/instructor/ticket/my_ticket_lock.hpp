// my_ticket_lock.hpp — REFERENCE SOLUTION of the exercise ticket (instructor
// folder). The contract and the algorithm are in the student's starter,
// exercises/ticket/my_ticket_lock.hpp; primitives/ticket_lock.hpp is the
// lab's own, with the long essay.
//
// Memory orders
// -------------
// - lock: next_.fetch_add(1, relaxed) only reserves a number; it publishes
//   nothing. The wait loads serving_ with acquire: the load that sees our
//   number reads the previous holder's release store, so its critical
//   section happens-before ours.
// - unlock: only the holder writes serving_, so a relaxed load and a
//   release store of +1 is a complete increment (no RMW needed); release
//   publishes the critical section.
// - try_lock: an acquire load of serving_ (the synchronisation), then a CAS
//   of next_ from s to s + 1, which only reserves the ticket (relaxed).
//   A try cannot take a ticket and hand it back: every later ticket would
//   wait for it forever. So it takes only a ticket that is served at once.
//
// Statistics: slow path only; spins = polls of serving_.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_atomic.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/lock_stats.hpp"

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

  void lock() noexcept {
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    if (serving_.load(std::memory_order_acquire) == ticket) return;  // uncontended
    std::int64_t spins = 0;
    while (serving_.load(std::memory_order_acquire) != ticket) {
      cpu_relax();
      ++spins;
    }
    stats_.record_contended_acquire(spins);
  }

  bool try_lock() noexcept {
    std::uint32_t s = serving_.load(std::memory_order_acquire);
    return next_.compare_exchange_strong(s, s + 1, std::memory_order_relaxed, std::memory_order_relaxed);
  }

  void unlock() noexcept {
    serving_.store(serving_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  std::int64_t queue_length() const noexcept {
    const std::uint32_t s = serving_.load(std::memory_order_relaxed);
    const std::uint32_t n = next_.load(std::memory_order_relaxed);
    const auto waiting = static_cast<std::int32_t>(n - s) - 1;
    return waiting > 0 ? waiting : 0;
  }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  // std::atomic that the checks can watch (exercises/support/counted_atomic.hpp).
  alignas(kCacheLineSize) CountedAtomic<std::uint32_t> next_{0};
  alignas(kCacheLineSize) CountedAtomic<std::uint32_t> serving_{0};
  LockStats stats_;
};

}  // namespace locklab::exercises
