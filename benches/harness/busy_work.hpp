// busy_work.hpp — "work" of a given length in nanoseconds, done by spinning a
// calibrated loop instead of reading a clock or sleeping.
//
// Why not sleep: a sleep gives the core away, so 200 ns of "critical section"
// would become a 50 µs scheduler round trip. Why not read the clock in the
// loop: a clock read (~20 ns via the vDSO) is itself larger than the
// shortest sections we want. So we measure once how many iterations of a tiny
// loop take a nanosecond and then just count.
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

  // Spins for about `ns` nanoseconds of this core's time. 0 or less: no-op.
  static void spin_ns(std::int64_t ns) noexcept {
    if (ns <= 0) return;
    spin_iterations(static_cast<std::uint64_t>(static_cast<double>(ns) * iterations_per_ns_));
  }

  static void spin_iterations(std::uint64_t n) noexcept {
    for (std::uint64_t i = 0; i < n; ++i) asm volatile("" : "+r"(i));
  }

  static double iterations_per_ns() noexcept { return iterations_per_ns_; }

 private:
  // Written only by calibrate() before any benchmark thread starts (the
  // thread start orders it before every read). 1.0 until calibrated.
  static inline double iterations_per_ns_ = 1.0;
};

}  // namespace locklab::bench
