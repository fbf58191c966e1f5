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
// whatever its length — and both memory (kCapacity samples per waiter) and
// clock reads (at most 2 x kCapacity x log2(ops / kCapacity) per waiter)
// stay bounded.
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

  // Records the latency of an operation for which due() returned true.
  void record(std::int64_t ns) {
    if (samples_.size() == kCapacity) {
      // Keep the samples of operations that end a block of the doubled
      // stride: position p holds index (p + 1) K - 1, which is 2K - 1
      // modulo 2K exactly when p is odd.
      for (std::size_t i = 0; i < kCapacity / 2; ++i) samples_[i] = samples_[2 * i + 1];
      samples_.resize(kCapacity / 2);
      stride_ *= 2;
      // The sample being recorded belongs to the kept set only if it ends a
      // block of the new stride.
      if (((index_ - 1) & (stride_ - 1)) != stride_ - 1) return;
    }
    samples_.push_back(ns);
  }

  std::uint64_t stride() const noexcept { return stride_; }
  const std::vector<std::int64_t>& samples() const noexcept { return samples_; }

 private:
  std::uint64_t index_ = 0;   // operations seen (due() calls)
  std::uint64_t stride_ = 1;  // K: a power of two
  std::vector<std::int64_t> samples_;
};

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
