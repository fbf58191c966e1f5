// lock_stats.hpp — the optional statistics every lock in this folder keeps:
// how often an acquire had to wait, how long it spun, how often it parked
// (slept in the kernel), how often a release woke a sleeper, and how often
// a waiter slept on a timer of its own (a doze) instead.
//
// Cheap by construction: only slow paths record anything (an uncontended
// acquire or release never touches these counters), spins are counted in a
// local variable and recorded once per slow acquire, and the counters are
// StripedCounters, so recording never adds a contended cache line of its own.
// Memory: six StripedCounters, ~1.5 KiB per lock until contended.
//
// Benchmarks divide the deltas by the harness's operation count to report
// spins_per_acquire, parks_per_acquire, ... (see benches/harness/suite.hpp).
#pragma once

#include <cstdint>

#include "primitives/striped_counter.hpp"

namespace locklab {

struct LockStatsSnapshot {
  std::int64_t contended_acquires = 0;  // acquires that did not succeed at once
  std::int64_t spins = 0;               // polls of the lock word while waiting
  std::int64_t parks = 0;               // sleeps in the kernel (futex waits)
  std::int64_t wakes = 0;               // wake-up calls made by releases
  std::int64_t handoffs = 0;            // releases that passed the lock directly
                                        // to a parked waiter (never unlocked it)
  std::int64_t dozes = 0;               // timed sleeps a waiter took and ended
                                        // itself, no release waking it (not in
                                        // parks: every park ends in a wake)
};

class LockStats {
 public:
  void record_contended_acquire(std::int64_t spins) noexcept {
    contended_acquires_.increment();
    if (spins != 0) spins_.add(spins);
  }
  void record_park() noexcept { parks_.increment(); }
  void record_wake() noexcept { wakes_.increment(); }
  void record_handoff() noexcept { handoffs_.increment(); }
  void record_doze() noexcept { dozes_.increment(); }

  LockStatsSnapshot snapshot() const noexcept {
    return {contended_acquires_.sum(), spins_.sum(), parks_.sum(), wakes_.sum(), handoffs_.sum(), dozes_.sum()};
  }

 private:
  StripedCounter contended_acquires_;
  StripedCounter spins_;
  StripedCounter parks_;
  StripedCounter wakes_;
  StripedCounter handoffs_;
  StripedCounter dozes_;
};

}  // namespace locklab
