#include "benches/harness/busy_work.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace locklab::bench {

void BusyWork::calibrate() {
  static std::once_flag once;
  std::call_once(once, [] {
    using Clock = std::chrono::steady_clock;
    // Run the loop for 200 ms first: an idle core (a VM's vCPU especially)
    // clocks up only under load, and a calibration taken at the idle clock
    // made a "1000 ns" critical section last ~560 ns once the core had
    // sped up (measured: 1.95 vs 3.65 iterations/ns in two runs here).
    const auto warm_until = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < warm_until) spin_iterations(100'000);
    constexpr std::uint64_t kIterations = 2'000'000;
    double best_ns = 1e300;
    for (int trial = 0; trial < 9; ++trial) {
      auto start = Clock::now();
      spin_iterations(kIterations);
      double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
      best_ns = std::min(best_ns, ns);
    }
    iterations_per_ns_ = static_cast<double>(kIterations) / std::max(best_ns, 1.0);
  });
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
