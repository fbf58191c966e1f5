// WRONG VERSION (grader fixture): the solution with lock() as a plain test-and-set loop, an exchange on
// every spin, no test and no backoff; MyBackoffLockTest.ContendedWaitersPollInsteadOfExchanging must fail.
// my_backoff_lock.hpp — REFERENCE SOLUTION of the exercise ttas_backoff
// (instructor folder: keep it away from students until they have tried).
// The student's starter is exercises/ttas_backoff/my_backoff_lock.hpp; the
// contract and the algorithm are stated there and in its README.
//
// Memory orders
// -------------
// - Every exchange that can take the lock is acquire: a successful one reads
//   the `false` stored by the previous holder's release, so that holder's
//   critical section happens-before ours.
// - unlock's store(false) is release: the other half of that pair.
// - The polling loads (TEST) and try_lock's first look are relaxed: they
//   only decide whether an exchange is worth trying; the exchange is what
//   synchronises. They are what makes TTAS cheaper than TAS: while the lock
//   is held every spinner reads its own shared copy of the line and sends no
//   traffic, where an exchange loop would take the line exclusive each time.
//
// Why back off: a lost exchange proves another core is contending right
// now; waiting a random while before the next poll lets the winner run and
// keeps the next stampede small. Random, so two losers do not retry in
// lock-step; bounded, because the lock may sit free while everyone backs
// off (the price shows at 1-2 waiters). The jitter's generator is a
// per-thread xorshift: no shared state, no contention of its own.
//
// Statistics: only the slow path records (one contended acquire, and the
// polls plus backoff pauses it spent as spins).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "exercises/support/counted_atomic.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::exercises {

class MyBackoffLock {
 public:
  static constexpr std::uint32_t kMinBackoff = 4;
  static constexpr std::uint32_t kMaxBackoff = 256;

  MyBackoffLock() = default;
  MyBackoffLock(const MyBackoffLock&) = delete;
  MyBackoffLock& operator=(const MyBackoffLock&) = delete;

  void lock() noexcept {
    // WRONG (the fixture's bug): test-and-set, an exchange on every spin.
    std::int64_t spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      cpu_relax();
      ++spins;
    }
    if (spins > 0) stats_.record_contended_acquire(spins);
  }

  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  // xorshift32, one state per thread, seeded from the thread's id (never 0).
  static std::uint32_t next_random() noexcept {
    thread_local std::uint32_t x =
        static_cast<std::uint32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id())) | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  }

  alignas(kCacheLineSize) CountedAtomic<bool> locked_{false};  // std::atomic<bool>, exchanges counted for the checks
  LockStats stats_;
};

}  // namespace locklab::exercises
