// relaxed_orderings.hpp — a WRONG version of the ticket exercise, kept to
// prove that the grade catches it: the reference solution
// (instructor/ticket/my_ticket_lock.hpp) with every memory order relaxed.
//
// Why it is wrong: nothing orders one holder's critical section before the
// next one's. The next holder's load of serving_ may see the new value
// without seeing the writes made under the lock (no release store for it to
// read, no acquire load to read it with), so two critical sections can
// overlap in what they observe although they never overlap in time.
//
// Why the Release checks pass anyway: on x86 every load is an acquire and
// every store a release in hardware, and the compiler has no reason to move
// the counter's accesses across these atomics in the conformance checks. The
// bug is in the C++ memory model, not in the machine code this compiler
// happens to emit here; ThreadSanitizer checks the model and reports a data
// race on the first shared variable written under the lock.
//
// Graded as exercises/ticket/my_ticket_lock.hpp:
//   exercises/check.sh ticket --lock exercises/instructor/wrong/ticket/relaxed_orderings.hpp
// must score below full marks: it FAILS the ThreadSanitizer level.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::exercises {

class MyTicketLock {
 public:
  MyTicketLock() = default;
  MyTicketLock(const MyTicketLock&) = delete;
  MyTicketLock& operator=(const MyTicketLock&) = delete;

  void lock() noexcept {
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    if (serving_.load(std::memory_order_relaxed) == ticket) return;  // uncontended
    std::int64_t spins = 0;
    while (serving_.load(std::memory_order_relaxed) != ticket) {
      cpu_relax();
      ++spins;
    }
    stats_.record_contended_acquire(spins);
  }

  bool try_lock() noexcept {
    std::uint32_t s = serving_.load(std::memory_order_relaxed);
    return next_.compare_exchange_strong(s, s + 1, std::memory_order_relaxed, std::memory_order_relaxed);
  }

  void unlock() noexcept {
    serving_.store(serving_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  std::int64_t queue_length() const noexcept {
    const std::uint32_t s = serving_.load(std::memory_order_relaxed);
    const std::uint32_t n = next_.load(std::memory_order_relaxed);
    const auto waiting = static_cast<std::int32_t>(n - s) - 1;
    return waiting > 0 ? waiting : 0;
  }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  alignas(kCacheLineSize) std::atomic<std::uint32_t> next_{0};
  alignas(kCacheLineSize) std::atomic<std::uint32_t> serving_{0};
  LockStats stats_;
};

}  // namespace locklab::exercises
