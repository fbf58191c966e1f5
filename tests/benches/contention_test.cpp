#include "benches/harness/contention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <stdexcept>
#include <thread>

#include "primitives/fetch_add_counter.hpp"

namespace locklab::bench {
namespace {

using std::chrono::milliseconds;

TEST(ContentionHarnessTest, CountsEveryOperationOfEveryWaiter) {
  FetchAddCounter counter;
  Workload w{.waiters = 5, .duration = milliseconds(50)};
  ContentionResult r = run_contention(w, [&](int) { counter.increment(); });
  ASSERT_EQ(r.ops_per_waiter.size(), 5u);
  EXPECT_EQ(static_cast<std::int64_t>(r.total_ops()), counter.get());
  for (auto ops : r.ops_per_waiter) EXPECT_GT(ops, 0u) << "every waiter ran (fairness > 0)";
  EXPECT_GT(r.fairness(), 0.0);
  EXPECT_LE(r.fairness(), 1.0);
}

TEST(ContentionHarnessTest, RunsAtLeastTheDurationAndStopsByItself) {
  // Lower bound only: sleep_until never returns early. No upper bound,
  // because CI machines are noisy (tests never assert speed).
  Workload w{.waiters = 3, .duration = milliseconds(30)};
  ContentionResult r = run_contention(w, [](int) {});
  EXPECT_GE(r.wall_seconds, 0.030);
  EXPECT_GT(r.ops_per_second(), 0.0);
  EXPECT_NEAR(r.ns_per_op() * r.ops_per_second(), 1e9, 1.0);
}

TEST(ContentionHarnessTest, EachWaiterHasItsOwnIndexAndThread) {
  std::mutex m;
  std::set<int> indexes;
  std::set<std::thread::id> ids;
  Workload w{.waiters = 4, .duration = milliseconds(20)};
  run_contention(w, [&](int i) {
    std::lock_guard g(m);
    indexes.insert(i);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(indexes, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(ids.size(), 4u);
}

TEST(ContentionHarnessTest, LockSeamGivesMutualExclusionAndCountsAcquires) {
  std::mutex lock;
  std::int64_t unguarded = 0;  // only ever touched while holding `lock`
  struct CountingLock {
    std::mutex& m;
    std::int64_t& n;
    void lock() { m.lock(); ++n; }
    void unlock() { m.unlock(); }
  } counting{lock, unguarded};
  Workload w{.waiters = 4, .duration = milliseconds(40), .cs_ns = 100};
  ContentionResult r = run_lock_contention(counting, w);
  EXPECT_EQ(static_cast<std::int64_t>(r.total_ops()), unguarded);
  EXPECT_EQ(r.per_unit, "acquire");
}

TEST(ContentionHarnessTest, LockRunsReportSampledAcquireLatency) {
  // A lock whose lock() always takes >= 200 us: every sampled acquire, and
  // so the median and p99, must be at least that.
  struct SlowLock {
    std::mutex m;
    void lock() {
      m.lock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    void unlock() { m.unlock(); }
  } slow;
  Workload w{.waiters = 2, .duration = milliseconds(30)};
  ContentionResult r = run_lock_contention(slow, w);
  auto value = [&](const std::string& name) {
    for (const auto& [n, v] : r.extra) {
      if (n == name) return v;
    }
    ADD_FAILURE() << name << " not reported";
    return 0.0;
  };
  EXPECT_GE(value("p50_us"), 200.0);
  EXPECT_GE(value("p99_us"), value("p50_us"));
  EXPECT_GE(value("p999_us"), value("p99_us"));
}

TEST(ContentionHarnessTest, ReportsEventDeltasNotTotals) {
  FetchAddCounter events;
  events.add(1000);  // happened before the run: must not be reported
  Workload w{.waiters = 2, .duration = milliseconds(20)};
  ContentionResult r = run_contention(
      w, [&](int) { events.add(2); },
      [&] { return EventCounts{{"things", static_cast<double>(events.get())}}; });
  ASSERT_EQ(r.event_deltas.size(), 1u);
  EXPECT_EQ(r.event_deltas[0].first, "things");
  EXPECT_DOUBLE_EQ(r.event_deltas[0].second, 2.0 * static_cast<double>(r.total_ops()));
}

TEST(ContentionHarnessTest, FairnessIsMinOverMax) {
  ContentionResult r;
  r.ops_per_waiter = {10, 40, 20};
  EXPECT_DOUBLE_EQ(r.fairness(), 0.25);
  r.ops_per_waiter = {0, 5};
  EXPECT_DOUBLE_EQ(r.fairness(), 0.0);
  r.ops_per_waiter = {7};
  EXPECT_DOUBLE_EQ(r.fairness(), 1.0);
}

double extra_named(const ContentionResult& r, const std::string& name) {
  auto it = std::find_if(r.extra.begin(), r.extra.end(), [&](const auto& e) { return e.first == name; });
  return it == r.extra.end() ? -1.0 : it->second;
}

TEST(ContentionHarnessTest, SteadyFairnessLeavesTheWarmupOut) {
  // Waiter 1 does 5 operations at the start and then blocks until well after
  // the run's end; waiter 0 works throughout. Over the whole run waiter 1
  // took part (fairness > 0); after the warm-up mark (a fifth of the run,
  // 100 ms here; its 5 operations take about 5 ms) it did nothing, so the
  // steady figure must be exactly 0. Counting the warm-up in would make it
  // positive. The margins (95 ms before the mark, 1 s after the end) are
  // wide so that a loaded machine cannot break the setup.
  const Workload w{.waiters = 2, .duration = milliseconds(500)};
  const auto t0 = std::chrono::steady_clock::now();
  int waiter1_ops = 0;  // only waiter 1 touches it
  ContentionResult r = run_contention(w, [&](int i) {
    if (i == 1 && ++waiter1_ops > 5) {
      std::this_thread::sleep_until(t0 + w.duration + milliseconds(1000));
      return;
    }
    std::this_thread::sleep_for(milliseconds(1));
  });
  ASSERT_EQ(r.ops_per_waiter.size(), 2u);
  EXPECT_EQ(r.ops_per_waiter[1], 6u) << "5 operations, and the one that blocked past the end";
  EXPECT_GT(r.fairness(), 0.0);
  EXPECT_DOUBLE_EQ(extra_named(r, kSteadyFairness), 0.0);
}

TEST(ContentionHarnessTest, SteadyFairnessIsAFractionAndOneForALoneWaiter) {
  // Two waiters doing the same 1 ms sleeps: the figure is in (0, 1], and
  // a lone waiter's is exactly 1 (min = max).
  ContentionResult one = run_contention({.waiters = 1, .duration = milliseconds(200)}, [](int) {});
  EXPECT_DOUBLE_EQ(extra_named(one, kSteadyFairness), 1.0);
  ContentionResult two = run_contention({.waiters = 2, .duration = milliseconds(200)},
                                        [](int) { std::this_thread::sleep_for(milliseconds(1)); });
  const double steady = extra_named(two, kSteadyFairness);
  EXPECT_GT(steady, 0.0);
  EXPECT_LE(steady, 1.0);
}

TEST(ContentionHarnessTest, RejectsNonsenseWorkloads) {
  auto run = [](Workload w) { run_contention(w, [](int) {}); };
  EXPECT_THROW(run({.waiters = 0}), std::invalid_argument);
  EXPECT_THROW(run({.waiters = 1, .duration = milliseconds(0)}), std::invalid_argument);
  EXPECT_THROW(run({.waiters = 1, .duration = milliseconds(-5)}), std::invalid_argument);
  EXPECT_THROW(run({.waiters = 1, .duration = milliseconds(5), .cs_ns = -1}), std::invalid_argument);
}

TEST(BusyWorkTest, CalibrationGivesAPositiveRate) {
  BusyWork::calibrate();
  EXPECT_GT(BusyWork::iterations_per_ns(), 0.0);
  BusyWork::spin_ns(-10);  // no-op, must not hang
  BusyWork::spin_ns(1000);
}

TEST(BusyWorkTest, RecalibrationReplacesTheRateAndOnlyShortWorkCountsIterations) {
  const double rate = BusyWork::recalibrate();
  EXPECT_GT(rate, 0.0);
  EXPECT_EQ(rate, BusyWork::iterations_per_ns());
  EXPECT_FALSE(BusyWork::counts_iterations(0));
  EXPECT_FALSE(BusyWork::counts_iterations(-5));
  EXPECT_TRUE(BusyWork::counts_iterations(1));
  EXPECT_TRUE(BusyWork::counts_iterations(BusyWork::kClockCheckedFromNs - 1));
  EXPECT_FALSE(BusyWork::counts_iterations(BusyWork::kClockCheckedFromNs));
}

// A section on either path lasts roughly what it was asked for: at least
// half (a sign slip in the fixed-cost correction, or a last piece that is
// skipped, would make it vanish) and at most ten times (a deadline that is
// never met, or a fixed cost added instead of subtracted twice over). Loose
// on purpose: the bound checks the arithmetic, not this machine's speed;
// best of 5 runs of 100 calls, so one preemption does not fail it.
TEST(BusyWorkTest, SectionsOnBothPathsLastRoughlyWhatWasAsked) {
  BusyWork::calibrate();
  for (const std::int64_t ns : {std::int64_t{300}, std::int64_t{2000}}) {
    double best_ns = 1e300;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 100; ++i) BusyWork::spin_ns(ns);
      const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
      best_ns = std::min(best_ns, took.count() / 100);
    }
    EXPECT_GT(best_ns, 0.5 * static_cast<double>(ns)) << ns << " ns asked";
    EXPECT_LT(best_ns, 10.0 * static_cast<double>(ns)) << ns << " ns asked";
  }
}

// The counted path subtracts its measured fixed cost, and never asks for a
// negative count.
TEST(BusyWorkTest, IterationCountsSubtractTheFixedCostAndStayNonNegative) {
  BusyWork::calibrate();
  EXPECT_EQ(BusyWork::iterations_for(0), 0u);
  EXPECT_EQ(BusyWork::iterations_for(-100), 0u);
  const double expected = (400 - BusyWork::counted_fixed_ns()) * BusyWork::iterations_per_ns();
  EXPECT_NEAR(static_cast<double>(BusyWork::iterations_for(400)), expected, 1.0);
  EXPECT_LE(BusyWork::iterations_for(100), BusyWork::iterations_for(200));
}

}  // namespace
}  // namespace locklab::bench
