// spin_without_pause_lock.hpp — EXHIBIT missing_pause (bug museum; read
// README.md): a test-and-test-and-set spin lock that is correct in every way
// a test can check, and wrong in a way only a measurement shows.
//
// It is TtasLock (primitives/ttas_lock.hpp) with one line less. It passes
// the whole conformance suite (missing_pause_test.cpp proves it); the bug is
// in what it costs, so its demonstration is a benchmark:
//   exercises/check.sh bug_museum --bench   -> results/museum_missing_pause.json
// which runs it beside TtasLock on the shared harness. Look at
// spins_per_acquire, cpu_per_wall and items_per_second.
//
// Memory orders as TtasLock's: acquire exchange, release store, relaxed polls.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab::museum {

class SpinWithoutPauseLock {
 public:
  SpinWithoutPauseLock() = default;
  SpinWithoutPauseLock(const SpinWithoutPauseLock&) = delete;
  SpinWithoutPauseLock& operator=(const SpinWithoutPauseLock&) = delete;

  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    std::int64_t spins = 0;
    for (;;) {
      while (locked_.load(std::memory_order_relaxed)) ++spins;  // poll, poll, poll
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

}  // namespace locklab::museum
