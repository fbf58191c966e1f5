// latency_sampler.hpp — acquire-latency percentiles without timing every
// acquire.
//
// Why sample
// ----------
// A steady_clock read costs ~20 ns on this lab's VM (the vDSO reads the TSC),
// and timing one acquire takes two of them, while an uncontended acquire +
// release takes ~12 ns. Timing every acquire would triple the cost of the
// points where throughput matters most. So each waiter times only every
// K-th acquire.
//
// How K is chosen: decimation
// ---------------------------
// A fixed K cannot suit both ends of a curve: one point makes 20 M acquires
// in 200 ms, another (a ticket lock with 64 waiters on 2 cores) a few
// hundred. Each waiter therefore starts with K = 1 and a buffer of
// kCapacity samples; when the buffer fills, it keeps every second sample
// and doubles K. The kept samples are always the last acquire of each block
// of K (indices K-1, 2K-1, 3K-1, ...) — an even spread over the whole run,
// whatever its length — and memory stays bounded (kCapacity samples per
// waiter).
//
// The buffer alone does not bound the clock reads' cost, which is what the
// throughput figures pay for: a waiter times up to
// kCapacity x (1 + log2(ops / kCapacity) / 2) acquires, ~8,500 of the
// ~160,000 each of 128 waiters makes in a 300 ms point with empty
// sections (5%), and a timed acquire costs two clock reads beside a ~12 ns
// lock/unlock. On the reference AMD VM
// AdaptiveMutex, ReentrantLock and Semaphore ran 1.27-1.28x as fast at 128
// waiters with empty sections when nothing was timed (1.04-1.06x at 1
// waiter), while the JVM harness, which then timed no acquire, paid nothing
// (it now samples by these rules too, benches/jvm/.../LatencySampler.java).
// So the stride also obeys a rate bound: at the end of every window of
// kRateWindow samples, a waiter whose samples started less than
// kMinIntervalNs (10 us) apart on average doubles K, as many times as it
// takes. A waiter then times about one acquire per 10 us of its running at
// most (two, while K catches up), ~0.5% of its time; a waiter that waits long
// for each acquire keeps K small, so the slow acquires a tail is made of are
// still timed. With the bound the same A/B read 0.91-0.96x the untimed build
// at every waiter count (the per-acquire test of whether to time, and code
// placement). The reference README of that VM, "a latency sampler that no
// longer taxes the curve", has the figures.
//
// Why the last of each block and not the first (indices 0, K, 2K, ...): the
// first acquire of a run is its slowest as a rule (the waiters start
// together and, on 2 cores, most of them wait for a core first), and index
// 0 is a multiple of every K, so it was kept at every stride and weighed K:
// one acquire counted as ~1/2048 of its waiter's run, half of the 0.1% that
// decides a p99.9. Measured on the reference Intel VM (16 and 128 waiters,
// 200 ns and 1 us sections, against a run that timed every acquire): the
// share of acquires slower than 2 ms read 9.6e-4 sampled against 4.8e-4
// exact for AdaptiveMutex, 5.4e-4 against 0.75e-4 for absl::Mutex, so p99.9
// read the startup's ~12 ms where the steady run's tail was far shorter.
// Sampled the last of each block, the first acquire weighs 1 while K = 1
// and leaves the buffer at the first decimation.
//
// Merging waiters
// ---------------
// A sample stands for K acquires of its waiter, and waiters end with
// different K (a starved waiter keeps K = 1). Percentiles are therefore
// weighted: each sample has weight K, so a waiter that made 1 % of the
// acquires contributes 1 % of the distribution, as it would if every
// acquire had been timed.
//
// What it cannot see: the true maximum (an unsampled acquire may have been
// the slowest one); the lock's own fairness statistics and the harness's
// min/max ops per waiter cover starvation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "primitives/cache_line.hpp"

namespace locklab::bench {

// One waiter's sampler. Not thread-safe: each waiter owns one, and the
// results are read after the waiters joined. Cache-line aligned so that
// neighbouring waiters' counters do not share a line.
class alignas(kCacheLineSize) LatencySampler {
 public:
  static constexpr std::size_t kCapacity = 2048;

  LatencySampler() { samples_.reserve(kCapacity); }

  // Whether the operation about to start should be timed (the last of its
  // block of K); call exactly once per operation.
  bool due() noexcept { return (index_++ & (stride_ - 1)) == stride_ - 1; }

  // The rate bound (see "How K is chosen"): at the end of every window of
  // kRateWindow samples, a waiter whose samples started less than
  // kMinIntervalNs apart on average halves its sampling rate until they
  // would not have.
  static constexpr std::uint32_t kRateWindow = 16;
  static constexpr std::int64_t kMinIntervalNs = 10'000;

  // Records the latency of an operation for which due() returned true.
  // Defined below the class.
  void record(std::int64_t ns);

  // The same, for an operation that started at `start_ns` (steady clock,
  // ns): applies the rate bound as well as the buffer's.
  void record(std::int64_t ns, std::int64_t start_ns);

  std::uint64_t stride() const noexcept { return stride_; }
  const std::vector<std::int64_t>& samples() const noexcept { return samples_; }

 private:
  // Doubles K and keeps the samples of operations that end a block of the
  // doubled stride: position p holds index (p + 1) K - 1, which is 2K - 1
  // modulo 2K exactly when p is odd.
  void halve_rate();
  // Whether the operation being recorded (index_ - 1) ends a block of K.
  bool current_is_kept() const noexcept { return ((index_ - 1) & (stride_ - 1)) == stride_ - 1; }

  std::uint64_t index_ = 0;   // operations seen (due() calls)
  std::uint64_t stride_ = 1;  // K: a power of two
  std::vector<std::int64_t> samples_;
  std::uint32_t window_count_ = 0;    // samples in the current rate window
  std::int64_t window_start_ns_ = 0;  // when the window's first one started
};

inline void LatencySampler::record(std::int64_t ns) {
  if (samples_.size() == kCapacity) {
    halve_rate();
    if (!current_is_kept()) return;
  }
  samples_.push_back(ns);
}

inline void LatencySampler::record(std::int64_t ns, std::int64_t start_ns) {
  if (window_count_ == 0) window_start_ns_ = start_ns;
  if (++window_count_ == kRateWindow) {
    window_count_ = 0;
    // At twice the stride the same window's samples would have been twice
    // as far apart; the cap on the stride only guards against a clock that
    // stands still.
    constexpr std::int64_t kWanted = std::int64_t{kRateWindow - 1} * kMinIntervalNs;
    bool halved = false;
    for (std::int64_t span = start_ns - window_start_ns_; span < kWanted && stride_ < (std::uint64_t{1} << 40);
         span = span * 2 + 1) {
      halve_rate();
      halved = true;
    }
    if (halved && !current_is_kept()) return;
  }
  record(ns);
}

inline void LatencySampler::halve_rate() {
  std::size_t kept = 0;
  for (std::size_t p = 1; p < samples_.size(); p += 2) samples_[kept++] = samples_[p];
  samples_.resize(kept);
  stride_ *= 2;
}

// Weighted percentiles over several waiters' samplers.
class LatencyDistribution {
 public:
  explicit LatencyDistribution(const std::vector<LatencySampler>& waiters) {
    for (const auto& w : waiters) {
      for (std::int64_t ns : w.samples()) weighted_.emplace_back(ns, static_cast<double>(w.stride()));
    }
    std::sort(weighted_.begin(), weighted_.end());
    for (const auto& [ns, weight] : weighted_) total_weight_ += weight;
  }

  bool empty() const noexcept { return weighted_.empty(); }
  std::size_t sample_count() const noexcept { return weighted_.size(); }

  // The share of the operations (by weight) slower than `ns`: 0 to 1; 0 if
  // there are no samples. A p99.9 under `ns` needs this under 0.001.
  double fraction_above_ns(std::int64_t ns) const noexcept {
    if (weighted_.empty()) return 0.0;
    double above = 0;
    for (const auto& [latency, weight] : weighted_) {
      if (latency > ns) above += weight;
    }
    return above / total_weight_;
  }

  // The smallest sampled latency at or below which a fraction `q` (0..1] of
  // the weight lies, in ns; 0 if there are no samples.
  double percentile_ns(double q) const noexcept {
    if (weighted_.empty()) return 0.0;
    const double target = q * total_weight_;
    double seen = 0;
    for (const auto& [ns, weight] : weighted_) {
      seen += weight;
      if (seen >= target) return static_cast<double>(ns);
    }
    return static_cast<double>(weighted_.back().first);
  }

 private:
  std::vector<std::pair<std::int64_t, double>> weighted_;
  double total_weight_ = 0;
};

}  // namespace locklab::bench
