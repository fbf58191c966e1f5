#include "benches/harness/suite.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace locklab::bench {
namespace {

TEST(SuiteTest, PointNamesFollowTheSchema) {
  EXPECT_EQ(point_name("counters", "StripedCounter", 4), "counters/StripedCounter/waiters:4");
  EXPECT_EQ(point_name("locks", "TicketLock", 64, {{"cs_ns", 200}, {"think_ns", 0}}),
            "locks/TicketLock/waiters:64/cs_ns:200/think_ns:0");
}

// Collects the counters of every run it is shown, by run name.
class CounterCollector final : public benchmark::BenchmarkReporter {
 public:
  std::map<std::string, benchmark::UserCounters> counters;
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) counters[r.run_name.function_name] = r.counters;
  }
};

// A point whose sections count calibrated iterations (under 500 ns) is
// re-calibrated just before it runs and says so in its counters; a point
// whose busy work reads the clock is not.
TEST(SuiteTest, PointsTimedByIterationCountReportTheirOwnCalibration) {
  auto fake = [](const Workload& w) {
    ContentionResult r;
    r.workload = w;
    r.ops_per_waiter = {100};
    r.wall_seconds = 0.001;
    r.cpu_seconds = 0.001;
    return r;
  };
  register_point("suite_test/Fake/waiters:1/cs_ns:200", Workload{.waiters = 1, .cs_ns = 200}, fake);
  register_point("suite_test/Fake/waiters:1/cs_ns:1000", Workload{.waiters = 1, .cs_ns = 1000}, fake);
  CounterCollector collector;
  benchmark::RunSpecifiedBenchmarks(&collector, "^suite_test/");
  ASSERT_EQ(collector.counters.size(), 2u);
  const auto& short_point = collector.counters.at("suite_test/Fake/waiters:1/cs_ns:200");
  ASSERT_EQ(short_point.count("busy_work_iterations_per_ns"), 1u);
  EXPECT_GT(short_point.at("busy_work_iterations_per_ns").value, 0.0);
  EXPECT_DOUBLE_EQ(short_point.at("busy_work_iterations_per_ns").value, BusyWork::iterations_per_ns());
  EXPECT_EQ(collector.counters.at("suite_test/Fake/waiters:1/cs_ns:1000").count("busy_work_iterations_per_ns"), 0u);
}

}  // namespace
}  // namespace locklab::bench
