// spin_without_pause_lock.hpp — THE FIX of the exhibit missing_pause
// (instructor folder): one cpu_relax() in the polling loop. It is then
// exactly the lab's TtasLock (primitives/ttas_lock.hpp).
//
// What `pause` does (primitives/cpu_relax.hpp): it tells the core the loop is
// a spin-wait. Without it the core runs the polling loop flat out: dozens of
// loads in flight speculatively, and when the lock word finally changes the
// core must throw them away (a memory-order machine clear, tens of cycles)
// before its exchange can go. On a hyper-threaded core the spinner also
// steals issue slots from its sibling, which may be the very thread holding
// the lock. The loop polls ~10-100x more often per microsecond and gains
// nothing: the lock is not freed any sooner by looking at it harder.
// What the benchmark shows (measured, never asserted): spins_per_acquire
// jumps by roughly the ratio of a `pause` to a load; throughput changes
// little on a VM without SMT and drops where the spinner shares a core with
// the holder; power (not measured here) rises.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::museum::fixed {

class SpinWithoutPauseLock {  // the name of the exhibit, with the pause back
 public:
  SpinWithoutPauseLock() = default;
  SpinWithoutPauseLock(const SpinWithoutPauseLock&) = delete;
  SpinWithoutPauseLock& operator=(const SpinWithoutPauseLock&) = delete;

  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    std::int64_t spins = 0;
    for (;;) {
      while (locked_.load(std::memory_order_relaxed)) {
        cpu_relax();  // the fix
        ++spins;
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) break;
    }
    stats_.record_contended_acquire(spins);
  }

  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  alignas(kCacheLineSize) std::atomic<bool> locked_{false};
  LockStats stats_;
};

}  // namespace locklab::museum::fixed
