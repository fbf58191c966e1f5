// tas_lock.hpp — the simplest correct spin lock: test-and-set in a loop.
//
// What it guarantees
// ------------------
// Mutual exclusion, nothing more. The word, its two states, the fast paths,
// what is invalid and the memory orders are shared with TtasLock and
// BackoffLock: see flag_spin_lock.hpp. No fairness at all: whichever core's
// exchange reaches the line first after a release wins, so a waiter can
// starve.
//
// Cost and when to use it
// -----------------------
// Never, in production: it exists to be measured. Every poll is an `xchg`, a
// read-modify-write that takes the cache line exclusive, so N spinners make
// the line bounce between cores on every poll, and the holder's own release
// waits in that queue. The locks bench shows it collapsing as waiters grow;
// with more waiters than cores it also spins away whole time slices while
// the holder is preempted. Uncontended: one `xchg` to lock, one plain store
// to unlock.
//
// The wait (acquire_contended): exchange, pause, exchange ... Statistics
// count the failed exchanges as spins.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/flag_spin_lock.hpp"

namespace locklab {

class TasLock : public FlagSpinLock<TasLock> {
 public:
  TasLock() = default;

 private:
  friend FlagSpinLock<TasLock>;
  // The slow path (out of line): wait until our exchange(true, acquire)
  // returns false; return the polls and pauses spent.
  static std::int64_t acquire_contended(std::atomic<bool>& locked) noexcept;
};

}  // namespace locklab
