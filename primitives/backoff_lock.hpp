// backoff_lock.hpp — TTAS plus bounded exponential backoff with jitter: when
// the exchange after a "looks free" read fails, the loser waits a random
// number of pauses below a limit that doubles on every further failure.
//
// What it guarantees
// ------------------
// Mutual exclusion; the two states of TtasLock (false = unlocked, true =
// locked by one unrecorded thread). No fairness, and less than TTAS: a thread
// that has backed off a long way loses to newcomers whose limit is small, so
// starvation is more likely, not less. No timed tries (see tas_lock.hpp).
//
// What is invalid
// ---------------
// unlock() by a non-holder: debug builds assert the lock is held (by anyone);
// a non-holder releasing a lock another thread holds is not detected and
// breaks mutual exclusion. Recursive lock() deadlocks.
//
// Cost and when to use it
// -----------------------
// A failed exchange proves another core is contending right now; stepping
// back for a while lets the winner run and keeps the next stampede small
// (Anderson 1990; the same idea as Ethernet's backoff). The random part
// (jitter) stops two losers from retrying in lock-step. The price is
// latency: the lock can sit free while every waiter is still backing off,
// which shows at 1-2 waiters. The limit bounds that idle time:
//   kMinBackoff = 4 pauses, kMaxBackoff = 256 pauses (~ 5 us: `pause` takes
//   20.0 ns on this lab's AMD EPYC, measured with a 10^7-pause loop).
// The ceiling is about one futex park + wake (~ 5-10 us), past which backing
// off costs more than sleeping would. First quick run of
//   bench_locks (quick mode, 2-core EPYC VM), M acquires/s, waiters 1/2/4/16/64:
//   cs_ns:0    BackoffLock 108.7/57.1/28.3/5.5/1.7   TtasLock 87.4/31.0/20.0/3.7/0.44
//   cs_ns:1000 BackoffLock 0.93/0.54/0.27/0.056/0.014 TtasLock 1.03/0.52/0.22/0.061/0.015
// i.e. backoff helps the short sections, and like every spin lock it still
// collapses once waiters outnumber the 2 cores.
// Uncontended cost is TTAS's: one `xchg` to lock, one store to unlock.
//
// Memory orders: exactly TtasLock's (relaxed polls; acquire exchange pairs
// with the release store in unlock). The backoff state is thread-local.
//
// Statistics: slow path only; spins count polls and backoff pauses.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

class BackoffLock {
 public:
  static constexpr std::uint32_t kMinBackoff = 4;     // pauses; see the essay
  static constexpr std::uint32_t kMaxBackoff = 256;   // pauses; see the essay

  BackoffLock() = default;
  BackoffLock(const BackoffLock&) = delete;
  BackoffLock& operator=(const BackoffLock&) = delete;

  // Blocks (spinning and backing off) until the caller holds the lock.
  // Precondition: the caller does not hold it.
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }

  // Takes the lock if it is free at this instant; never waits.
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  // Releases the lock. Precondition: the caller holds it. Never blocks.
  void unlock() noexcept {
    assert(locked_.load(std::memory_order_relaxed) && "BackoffLock::unlock: lock not held");
    locked_.store(false, std::memory_order_release);
  }

  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  void lock_slow() noexcept;

  alignas(kCacheLineSize) std::atomic<bool> locked_{false};
  LockStats stats_;
};

}  // namespace locklab
