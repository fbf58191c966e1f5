// busy_work.hpp — "work" of a given length in nanoseconds, done by spinning
// on the core instead of sleeping.
//
// Why not sleep: a sleep gives the core away, so 200 ns of "critical section"
// would become a 50 µs scheduler round trip. Why not only read the clock: a
// clock read (~20 ns via the vDSO) is itself larger than the shortest
// sections we want. So short sections count iterations of a tiny loop whose
// speed was measured once, and long ones (see spin_ns) also watch the clock.
// Note the semantics for long sections: a holder preempted mid-section
// finishes as soon as it runs again after its deadline.
//
// The loop body is an empty asm statement that claims to modify the counter,
// which stops the compiler from deleting or vectorising the loop without
// adding any memory traffic that could interfere with the locks under test.
#pragma once

#include <cstdint>

namespace locklab::bench {

class BusyWork {
 public:
  // Measures the loop speed (best of several ~2 ms trials, so a preempted
  // trial does not skew it) after 200 ms of warm-up spinning, so the core
  // runs at its loaded clock. Thread-safe and idempotent; the first call
  // costs ~0.25 s. Called by the suite runner before any benchmark.
  static void calibrate();

  // Measures the loop speed again, briefly (20 ms of warm-up, then the same
  // best-of-9 trials at a tenth of the length; ~22 ms), and uses it from
  // now on. The suite runner calls it before every point whose sections or
  // think time count iterations (under kClockCheckedFromNs), because one
  // calibration per suite run did not hold: a full locks run calibrated at
  // 1.99 iterations/ns just after a rebuild, its "200 ns" sections then ran
  // ~105-120 ns for 82 minutes (7.5 M acquires/s at 1 waiter, against 4.0
  // in a run calibrated at 3.75). Not thread-safe: call it only while no
  // waiter runs (thread creation then orders the write before every read).
  // Returns the new iterations per ns.
  static double recalibrate();
  // Whether a workload's sections or think time are timed by iteration
  // count, i.e. depend on the calibration.
  static bool counts_iterations(std::int64_t ns) noexcept { return ns > 0 && ns < kClockCheckedFromNs; }

  // Spins for about `ns` nanoseconds. 0 or less: no-op. Below
  // kClockCheckedFromNs it counts calibrated iterations (no clock read);
  // from there on it also reads the steady clock every ~50 ns of work and
  // stops at the deadline. Why: this lab's VMs change clock speed between
  // and within runs (calibrations of 1.4, 1.95 and 3.65 iterations/ns on one
  // machine in one hour), so an iteration count alone made "1000 ns" last
  // anywhere from ~400 to ~1000 ns. A clock read (~20 ns) is noise against a
  // section of 500 ns or more, and decisive below it.
  static void spin_ns(std::int64_t ns) noexcept {
    if (ns <= 0) return;
    if (ns < kClockCheckedFromNs) {
      spin_iterations(static_cast<std::uint64_t>(static_cast<double>(ns) * iterations_per_ns_));
      return;
    }
    spin_until(ns);
  }
  static constexpr std::int64_t kClockCheckedFromNs = 500;

  static void spin_iterations(std::uint64_t n) noexcept {
    for (std::uint64_t i = 0; i < n; ++i) asm volatile("" : "+r"(i));
  }

  static double iterations_per_ns() noexcept { return iterations_per_ns_; }

 private:
  static void spin_until(std::int64_t ns) noexcept;
  // Written only by calibrate() and recalibrate(), while no waiter thread
  // runs (a point's threads start after it, which orders the write before
  // their reads). 1.0 until calibrated.
  static inline double iterations_per_ns_ = 1.0;
};

}  // namespace locklab::bench
