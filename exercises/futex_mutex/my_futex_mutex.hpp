// my_futex_mutex.hpp — YOUR lock for the exercise futex_mutex (read
// README.md first): a mutex that sleeps in the kernel on its own 32-bit
// word, climbed in three steps (the README states them; write each in turn,
// the checks tell you which one you are on).
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the methods marked TODO. Run the checks with
//   exercises/check.sh futex_mutex
//
// The contract (what the checks hold you to)
// ------------------------------------------
// - lock(): returns once the calling thread holds the lock; at most one
//   thread holds it at a time; everything the previous holder wrote before
//   its unlock() is visible after our lock() returns (happens-before).
// - A waiter that cannot have the lock soon SLEEPS (futex_wait), it does not
//   spin for as long as the lock is held.
// - No lost wake-ups: every sleeper is eventually woken by some unlock().
// - An uncontended lock()/unlock() makes NO system call: no futex_wait, no
//   futex_wake (step 2 is what gets you there).
// - try_lock(): takes the lock if it is free at this instant and returns
//   true, else returns false at once. Never waits, never sleeps.
// - unlock(): releases it. Precondition: the caller holds it.
//
// The futex calls: use the counted ones
// -------------------------------------
// exercises/support/counted_futex.hpp (included below) gives you
//   futex_wait(word, expected)   sleeps while word == expected (the kernel
//                                compares and queues atomically); returns on
//                                a wake, at once if the word differs, or
//                                spuriously: always re-check the word
//   futex_wake_one(word)         wakes one sleeper on word (if any)
//   futex_wake_all(word)         wakes them all
// the lab's wrappers of primitives/futex.hpp under the same names, counted,
// so the checks can see how often your lock enters the kernel. Call them
// unqualified from inside this namespace (as written, they are the ones
// found); `word` is the std::atomic<std::uint32_t> below.
//
// The word
// --------
//   std::atomic<std::uint32_t> state_   0 = unlocked, 1 = locked
//   (step 2 adds 2 = locked, and some thread may be asleep on the word)
// Decide the memory order of every atomic operation and write down why:
// which operation takes the lock, which one releases it, and what may a poll
// that only decides whether to try be?
//
// Optional, for the plot's spins/parks/wakes panels: keep a LockStats
// (primitives/lock_stats.hpp) and add
//   LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }
// recording only on slow paths (record_contended_acquire(spins),
// record_park(), record_wake()). With stats() present the suite runs two
// more checks: an uncontended lock/unlock records nothing, and contention is
// counted.
#pragma once

#include <atomic>
#include <cstdint>

#include "exercises/support/counted_futex.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {

class MyFutexMutex {
 public:
  MyFutexMutex() = default;
  MyFutexMutex(const MyFutexMutex&) = delete;
  MyFutexMutex& operator=(const MyFutexMutex&) = delete;

  // Blocks until the caller holds the lock: (step 3: spins a little, then)
  // sleeps in futex_wait until an unlock wakes it and it can take the word.
  void lock() noexcept {
    // TODO(you): step 1, then 2, then 3 (README.md).
  }

  // Takes the lock if it is free now; never waits. True if the caller holds it.
  bool try_lock() noexcept {
    // TODO(you): one compare-exchange.
    return true;  // the starter always says yes (false would make std::lock spin forever)
  }

  // Releases the lock and wakes a sleeper (step 2: only if there may be one).
  // Precondition: the caller holds it.
  void unlock() noexcept {
    // TODO(you)
  }

 private:
  alignas(kCacheLineSize) std::atomic<std::uint32_t> state_{0};
};

}  // namespace locklab::exercises
