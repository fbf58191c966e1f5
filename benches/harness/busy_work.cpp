#include "benches/harness/busy_work.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace locklab::bench {

namespace {

// Spins `warm_up` first, then returns the best of 9 timed runs of
// `iterations` loop iterations, in iterations per ns. Best, not median: a
// trial can only be slowed (preempted, interrupted), never sped up.
double measure_iterations_per_ns(std::chrono::milliseconds warm_up, std::uint64_t iterations) {
  using Clock = std::chrono::steady_clock;
  const auto warm_until = Clock::now() + warm_up;
  while (Clock::now() < warm_until) BusyWork::spin_iterations(100'000);
  double best_ns = 1e300;
  for (int trial = 0; trial < 9; ++trial) {
    auto start = Clock::now();
    BusyWork::spin_iterations(iterations);
    double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    best_ns = std::min(best_ns, ns);
  }
  return static_cast<double>(iterations) / std::max(best_ns, 1.0);
}

}  // namespace

void BusyWork::calibrate() {
  static std::once_flag once;
  // Run the loop for 200 ms first: an idle core (a VM's vCPU especially)
  // clocks up only under load, and a calibration taken at the idle clock
  // made a "1000 ns" critical section last ~560 ns once the core had
  // sped up (measured: 1.95 vs 3.65 iterations/ns in two runs here).
  std::call_once(once, [] { iterations_per_ns_ = measure_iterations_per_ns(std::chrono::milliseconds(200), 2'000'000); });
}

double BusyWork::recalibrate() {
  // Between points the core has just been busy, so a short warm-up does; the
  // trials (~0.05-0.1 ms each) are long against the clock's resolution.
  iterations_per_ns_ = measure_iterations_per_ns(std::chrono::milliseconds(20), 200'000);
  return iterations_per_ns_;
}

void BusyWork::spin_until(std::int64_t ns) noexcept {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::nanoseconds(ns);
  const auto chunk = static_cast<std::uint64_t>(50.0 * iterations_per_ns_) + 1;
  do {
    spin_iterations(chunk);
  } while (Clock::now() < deadline);
}

}  // namespace locklab::bench
