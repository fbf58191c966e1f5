#include "benches/harness/latency_sampler.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace locklab::bench {
namespace {

// Feeds `ops` operations whose latency equals their index into a sampler.
LatencySampler sample_indices(std::uint64_t ops) {
  LatencySampler s;
  for (std::uint64_t i = 0; i < ops; ++i) {
    if (s.due()) s.record(static_cast<std::int64_t>(i));
  }
  return s;
}

TEST(LatencySamplerTest, TimesEveryOperationUntilTheBufferFills) {
  const LatencySampler s = sample_indices(LatencySampler::kCapacity);
  EXPECT_EQ(s.stride(), 1u);
  ASSERT_EQ(s.samples().size(), LatencySampler::kCapacity);
  EXPECT_EQ(s.samples().back(), static_cast<std::int64_t>(LatencySampler::kCapacity - 1));
}

TEST(LatencySamplerTest, DecimationKeepsEveryKthOperationAndBoundsMemory) {
  const std::uint64_t ops = 1'000'003;
  const LatencySampler s = sample_indices(ops);
  EXPECT_LE(s.samples().size(), LatencySampler::kCapacity);
  EXPECT_GE(s.samples().size(), LatencySampler::kCapacity / 2);
  // The kept samples are exactly the indices K-1, 2K-1, ...: an even spread.
  for (std::size_t j = 0; j < s.samples().size(); ++j) {
    ASSERT_EQ(s.samples()[j], static_cast<std::int64_t>((j + 1) * s.stride() - 1)) << "sample " << j;
  }
  // ... covering the whole run, not only its start.
  EXPECT_GT(static_cast<std::uint64_t>(s.samples().back()) + s.stride(), ops - 1 - s.stride());
}

// Feeds `ops` operations whose latency equals their index, the i-th
// starting at i * gap_ns, through the rate-bounded record().
LatencySampler sample_indices_timed(std::uint64_t ops, std::int64_t gap_ns) {
  LatencySampler s;
  for (std::uint64_t i = 0; i < ops; ++i) {
    if (s.due()) s.record(static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) * gap_ns);
  }
  return s;
}

void expect_every_kth_operation(const LatencySampler& s) {
  for (std::size_t j = 0; j < s.samples().size(); ++j) {
    ASSERT_EQ(s.samples()[j], static_cast<std::int64_t>((j + 1) * s.stride() - 1)) << "sample " << j;
  }
}

TEST(LatencySamplerTest, FastOperationsAreTimedAtMostOncePerMinInterval) {
  // 10 ns operations: unbounded, the first 2,048 would all be timed. The
  // rate bound lets at most about one per kMinIntervalNs through (two per
  // interval while the stride catches up), and keeps the even spread.
  const std::uint64_t ops = 100'000;  // 1 ms of them
  const std::int64_t gap_ns = 10;
  const LatencySampler s = sample_indices_timed(ops, gap_ns);
  EXPECT_GE(s.stride() * static_cast<std::uint64_t>(gap_ns),
            static_cast<std::uint64_t>(LatencySampler::kMinIntervalNs) / 2);
  const std::uint64_t run_ns = ops * static_cast<std::uint64_t>(gap_ns);
  EXPECT_LE(s.samples().size(), 2 * run_ns / LatencySampler::kMinIntervalNs + LatencySampler::kRateWindow);
  EXPECT_FALSE(s.samples().empty());
  expect_every_kth_operation(s);
}

TEST(LatencySamplerTest, SlowOperationsAreAllTimedUntilTheBufferFills) {
  // 1 ms operations are slower than the rate bound: the buffer's rule alone.
  const LatencySampler s = sample_indices_timed(LatencySampler::kCapacity, 1'000'000);
  EXPECT_EQ(s.stride(), 1u);
  EXPECT_EQ(s.samples().size(), LatencySampler::kCapacity);
  const LatencySampler longer = sample_indices_timed(100'003, 1'000'000);
  EXPECT_EQ(longer.stride(), sample_indices(100'003).stride());
  expect_every_kth_operation(longer);
}

TEST(LatencyDistributionTest, TheFirstOperationWeighsOne) {
  // 16 waiters whose first operation waited 5 ms (a run's start) and whose
  // 1,000,000 others took 1 us: 16 slow operations in 16,000,016. Kept at
  // every stride (the sampler's old phase), each first one weighed K = 512
  // and the slow share read 5e-4 instead of 1e-6.
  std::vector<LatencySampler> waiters(16);
  for (auto& w : waiters) {
    if (w.due()) w.record(5'000'000);
    for (int i = 0; i < 1'000'000; ++i) {
      if (w.due()) w.record(1'000);
    }
  }
  const LatencyDistribution d(waiters);
  EXPECT_LE(d.fraction_above_ns(1'000'000), 2.0 / 1'000'000);
  EXPECT_EQ(d.percentile_ns(0.9995), 1'000);
}

TEST(LatencyDistributionTest, FractionAboveCountsTheSlowOperationsShare) {
  // 1,000 operations, 10 of them at 5 ms: every one is timed (K = 1).
  std::vector<LatencySampler> one(1);
  for (int i = 0; i < 1'000; ++i) {
    if (one[0].due()) one[0].record(i % 100 == 99 ? 5'000'000 : 1'000);
  }
  const LatencyDistribution d(one);
  EXPECT_DOUBLE_EQ(d.fraction_above_ns(1'000'000), 0.01);
  EXPECT_DOUBLE_EQ(d.fraction_above_ns(10'000'000), 0.0);
  EXPECT_DOUBLE_EQ(LatencyDistribution(std::vector<LatencySampler>(2)).fraction_above_ns(0), 0.0);
}

TEST(LatencyDistributionTest, PercentilesOfAUniformRun) {
  const std::vector<LatencySampler> one{sample_indices(100'000)};
  const LatencyDistribution d(one);
  // Latencies 0..99999: the median is ~50000 and p99 ~99000, within one stride.
  const double k = static_cast<double>(one[0].stride());
  EXPECT_NEAR(d.percentile_ns(0.50), 50'000, k);
  EXPECT_NEAR(d.percentile_ns(0.99), 99'000, k);
}

TEST(LatencyDistributionTest, WeightsEachWaiterByItsStride) {
  // Waiter A made 100x the operations of waiter B, all at 10 ns; B's are all
  // at 1000 ns. Unweighted, B's samples would be a third of the buffer's
  // worth; weighted, they are ~1% of the operations, so the median is A's.
  std::vector<LatencySampler> waiters(2);
  for (int i = 0; i < 100'000; ++i) {
    if (waiters[0].due()) waiters[0].record(10);
  }
  for (int i = 0; i < 1'000; ++i) {
    if (waiters[1].due()) waiters[1].record(1000);
  }
  const LatencyDistribution d(waiters);
  EXPECT_EQ(d.percentile_ns(0.50), 10);
  EXPECT_EQ(d.percentile_ns(0.98), 10);
  EXPECT_EQ(d.percentile_ns(0.999), 1000);
}

TEST(LatencyDistributionTest, EmptyIsZero) {
  const LatencyDistribution d(std::vector<LatencySampler>(3));
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.percentile_ns(0.99), 0.0);
}

}  // namespace
}  // namespace locklab::bench
