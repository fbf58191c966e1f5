// my_backoff_lock.hpp — YOUR lock for the exercise ttas_backoff (read
// README.md first): test-and-test-and-set with bounded exponential backoff.
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the three methods marked TODO. Run the checks with
//   exercises/check.sh ttas_backoff
//
// The contract (what tests/primitives/lock_conformance.hpp checks)
// -----------------------------------------------------------------
// - lock(): returns once the calling thread holds the lock; at most one
//   thread holds it at a time; everything the previous holder wrote before
//   its unlock() is visible after our lock() returns (happens-before).
// - try_lock(): takes the lock if it is free at this instant and returns
//   true, else returns false at once. Never waits for the holder.
// - unlock(): releases it. Precondition: the caller holds it.
//
// The algorithm to write (the wait in lock() is the point of the exercise)
// -------------------------------------------------------------------------
//   one word: std::atomic<bool> locked_   false = free, true = held
//   lock:   exchange(true); if it returned false, you hold the lock (fast path).
//           Otherwise, loop:
//             - TEST: poll locked_ with a plain load until it reads false,
//               with cpu_relax() between polls (primitives/cpu_relax.hpp);
//             - TEST-AND-SET: exchange(true); false means it is yours;
//             - lost the race: BACK OFF for a random number of cpu_relax()
//               below `limit` (start at kMinBackoff), then double `limit`,
//               never beyond kMaxBackoff, and poll again.
//   unlock: store(false).
// The word is a CountedAtomic<bool> (exercises/support/counted_atomic.hpp):
// std::atomic<bool> whose exchanges a check counts. Under contention a
// waiter must mostly poll (loads) and back off, not exchange: the check
// allows a few exchanges per acquisition, a test-and-set loop makes dozens.
// Decide the memory order of each atomic operation and write down why (see
// primitives/flag_spin_lock.hpp for the argument the reference locks make).
//
// Optional, for the plot's spins-per-acquire panel: keep a LockStats
// (primitives/lock_stats.hpp) and add
//   LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }
// recording only on the slow path (stats_.record_contended_acquire(spins)).
// With stats() present the suite runs two more checks: an uncontended
// lock/unlock records nothing, and contention is counted.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_atomic.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {

class MyBackoffLock {
 public:
  static constexpr std::uint32_t kMinBackoff = 4;    // pauses after the first lost race
  static constexpr std::uint32_t kMaxBackoff = 256;  // the cap (~5 us of `pause` on the lab machine)

  MyBackoffLock() = default;
  MyBackoffLock(const MyBackoffLock&) = delete;
  MyBackoffLock& operator=(const MyBackoffLock&) = delete;

  // Blocks (spinning, then backing off) until the caller holds the lock.
  void lock() noexcept {
    // TODO(you): the fast path, then the test / test-and-set / back-off loop.
  }

  // Takes the lock if it is free now; never waits. True if the caller holds it.
  bool try_lock() noexcept {
    // TODO(you): look first (a load), then one exchange.
    return true;  // the starter always says yes (false would make std::lock spin forever)
  }

  // Releases the lock. Precondition: the caller holds it.
  void unlock() noexcept {
    // TODO(you)
  }

 private:
  // CountedAtomic<bool> is std::atomic<bool> whose exchanges the checks can
  // count (exercises/support/counted_atomic.hpp): keep this type.
  alignas(kCacheLineSize) CountedAtomic<bool> locked_{false};
};

}  // namespace locklab::exercises
