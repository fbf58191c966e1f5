// ttas_lock.hpp — test-and-test-and-set: spin on a plain load, and try the
// exchange only when the lock looks free.
//
// What it guarantees
// ------------------
// Mutual exclusion; the word, fast paths, invalid uses and memory orders of
// flag_spin_lock.hpp. No fairness: after a release every spinner sees
// `false` at about the same time and the first exchange wins; a waiter can
// starve.
//
// Cost and when to use it
// -----------------------
// The fix for TasLock's line bouncing: while the lock is held, each spinner
// reads its own shared copy of the line and generates no traffic, and
// `pause` (cpu_relax) between polls keeps the loop from flooding the
// pipeline. A release still invalidates every copy and starts a stampede of
// exchanges (O(N) line transfers per hand-off), which BackoffLock damps and
// MCS removes. Like every pure spin lock it collapses when waiters outnumber
// cores: a preempted holder makes every spinner burn its whole time slice.
// Uncontended: one `xchg` to lock, one plain store to unlock.
//
// The wait (acquire_contended): relaxed polling loads with a pause between
// them (they only decide when the acquire exchange is worth trying), then
// the exchange. Statistics count the polls as spins.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/flag_spin_lock.hpp"

namespace locklab {

class TtasLock : public FlagSpinLock<TtasLock> {
 public:
  TtasLock() = default;

 private:
  friend FlagSpinLock<TtasLock>;
  // The slow path (out of line): wait until our exchange(true, acquire)
  // returns false; return the polls and pauses spent.
  static std::int64_t acquire_contended(std::atomic<bool>& locked) noexcept;
};

}  // namespace locklab
