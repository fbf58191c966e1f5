// backoff_lock.hpp — TTAS plus bounded exponential backoff with jitter: when
// the exchange after a "looks free" read fails, the loser waits a random
// number of pauses below a limit that doubles on every further failure.
//
// What it guarantees
// ------------------
// Mutual exclusion; the word, fast paths, invalid uses and memory orders of
// flag_spin_lock.hpp. No fairness, and less than TTAS: a thread that has
// backed off a long way loses to newcomers whose limit is small, so
// starvation is more likely, not less.
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
// The wait (acquire_contended): TtasLock's, plus the backoff after each lost
// exchange; its state is local to the waiting call (the jitter's generator
// is thread-local). Statistics count polls and backoff pauses as spins.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/flag_spin_lock.hpp"

namespace locklab {

class BackoffLock : public FlagSpinLock<BackoffLock> {
 public:
  static constexpr std::uint32_t kMinBackoff = 4;    // pauses; see the essay
  static constexpr std::uint32_t kMaxBackoff = 256;  // pauses; see the essay

  BackoffLock() = default;

 private:
  friend FlagSpinLock<BackoffLock>;
  // The slow path (out of line): wait until our exchange(true, acquire)
  // returns false; return the polls and pauses spent.
  static std::int64_t acquire_contended(std::atomic<bool>& locked) noexcept;
};

}  // namespace locklab
