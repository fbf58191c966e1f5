#include "benches/harness/busy_work.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace locklab::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point start) noexcept {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

// Best of 9 timed runs of `trial`, in ns per run. Best, not median: a trial
// can only be slowed (preempted, interrupted), never sped up.
template <class Trial>
double best_of_9_ns(Trial trial) {
  double best_ns = 1e300;
  for (int i = 0; i < 9; ++i) {
    const auto start = Clock::now();
    trial();
    best_ns = std::min(best_ns, ns_since(start));
  }
  return std::max(best_ns, 1.0);
}

// Spins `warm_up` first, then returns the loop speed over runs of
// `iterations`, in iterations per ns.
double measure_iterations_per_ns(std::chrono::milliseconds warm_up, std::uint64_t iterations) {
  const auto warm_until = Clock::now() + warm_up;
  while (Clock::now() < warm_until) BusyWork::spin_iterations(100'000);
  return static_cast<double>(iterations) / best_of_9_ns([&] { BusyWork::spin_iterations(iterations); });
}

// Bounds on the measured fixed costs: a few times what the 2-core VM
// measures (counted ~7-14 ns, clock-checked ~37 ns), so that one wild
// calibration cannot make sections vanish or double.
constexpr double kMaxCountedFixedNs = 60;
constexpr double kMaxClockCheckedFixedNs = 250;

}  // namespace

void BusyWork::calibrate() {
  static std::once_flag once;
  // Run the loop for 200 ms first: an idle core (a VM's vCPU especially)
  // clocks up only under load, and a calibration taken at the idle clock
  // made a "1000 ns" critical section last ~560 ns once the core had
  // sped up (measured: 1.95 vs 3.65 iterations/ns in two runs here).
  std::call_once(once, [] {
    iterations_per_ns_ = measure_iterations_per_ns(std::chrono::milliseconds(200), 2'000'000);
    measure_fixed_costs();
  });
}

double BusyWork::recalibrate() {
  // Between points the core has just been busy, so a short warm-up does; the
  // trials (~0.05-0.1 ms each) are long against the clock's resolution.
  iterations_per_ns_ = measure_iterations_per_ns(std::chrono::milliseconds(20), 200'000);
  measure_fixed_costs();
  return iterations_per_ns_;
}

// Each fixed cost is measured as the header defines a section's length: a
// loop of lock; spin_ns(N); unlock on an uncontended std::mutex, against the
// same loop with an empty section, 200 operations a run; N = 200 and 1000,
// the points the locks suite runs on each path. Under the lock, not bare:
// the instructions around the section are part of what overlaps with it or
// not (BusyWork.java's fixed cost was -16.5 ns back to back and -29 ns under
// a lock; with the former its "200 ns" sections ran 190 ns in the suite).
// Best of 25 runs of each (~6 ms in all), interleaved so that a change of
// clock speed meets all three alike.
void BusyWork::measure_fixed_costs() noexcept {
  constexpr int kCalls = 200;
  constexpr int kTrials = 25;
  std::mutex mutex;
  auto run_ns = [&mutex](std::int64_t section_ns) {
    const auto start = Clock::now();
    for (int i = 0; i < kCalls; ++i) {
      mutex.lock();
      spin_ns(section_ns);
      mutex.unlock();
    }
    return ns_since(start);
  };
  counted_fixed_ns_ = 0;
  clock_checked_fixed_ns_ = 0;
  double empty_ns = 1e300;
  double counted_ns = 1e300;
  double clock_checked_ns = 1e300;
  for (int trial = 0; trial < kTrials; ++trial) {
    empty_ns = std::min(empty_ns, run_ns(0));
    counted_ns = std::min(counted_ns, run_ns(200));
    clock_checked_ns = std::min(clock_checked_ns, run_ns(1000));
  }
  counted_fixed_ns_ = std::clamp((counted_ns - empty_ns) / kCalls - 200, -kMaxCountedFixedNs, kMaxCountedFixedNs);
  clock_checked_fixed_ns_ =
      std::clamp((clock_checked_ns - empty_ns) / kCalls - 1000, -kMaxClockCheckedFixedNs, kMaxClockCheckedFixedNs);
}

// Reads the clock, spins in chunks of at most 50 ns until at most
// kLastPieceNs is left, then counts the rest without another read: the
// last read lands before the deadline, not up to a chunk and a read past
// it. The budget is the section less its measured fixed cost (the first
// read before its sample, the last after it, the final loop exit).
void BusyWork::spin_until(std::int64_t ns) noexcept {
  constexpr double kChunkNs = 50;
  const auto start = Clock::now();
  const double budget = static_cast<double>(ns) - clock_checked_fixed_ns_;
  for (;;) {
    const double left = budget - ns_since(start);
    if (left <= static_cast<double>(kLastPieceNs)) {
      if (left > 0) spin_iterations(static_cast<std::uint64_t>(left * iterations_per_ns_));
      return;
    }
    // Leave at least half the last piece for counting, so the next read
    // cannot land past the deadline.
    const double chunk_ns = std::min(kChunkNs, left - static_cast<double>(kLastPieceNs) / 2);
    spin_iterations(static_cast<std::uint64_t>(chunk_ns * iterations_per_ns_));
  }
}

}  // namespace locklab::bench
