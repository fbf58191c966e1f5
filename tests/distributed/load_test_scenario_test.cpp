// The invariants of the ticket-sale load test (benches/scenarios/load_test.hpp),
// at small sizes and a large time scale on the test's own redis-server:
// every offered request ends in exactly one outcome; one holder at a time
// (a counter under the permit); GuardedLock's gate never lets more than
// max_waiters in; the physical limit and the queueing model are computed
// right. No wall-clock assertions: only counts and the model's arithmetic.
#include "benches/scenarios/load_test.hpp"

#include <gtest/gtest.h>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::scenarios {
namespace {

using namespace std::chrono_literals;

class LoadTestScenario : public redis::testing::RedisTest {
 protected:
  // Case 2's shape, 2 unscaled minutes at time scale 500 (0.24 s), a lease far
  // beyond any hold so that a slow machine (ASan) cannot expire a permit
  // under its holder.
  LoadConfig small(bool guarded) {
    LoadConfig c;
    c.hold_lo_s = 1;
    c.hold_hi_s = 10;
    c.run_s = 120;
    c.time_scale = 500;
    c.lease_s = 600;
    c.sample_s = 5;
    c.workers = 8;
    c.guarded = guarded;
    c.wait_s = guarded ? 5 : 60;
    c.key = key();
    return c;
  }
  LoadResult run(const LoadConfig& c) {
    redis::Client::Options o = options();
    o.command_timeout = 10s;
    redis::Client pool_client(o);
    return run_load_test(pool_client, client(), c);
  }
  static void expect_accounted(const LoadResult& r, int workers) {
    EXPECT_GT(r.offered, 0);
    EXPECT_EQ(r.offered, r.served + r.timed_out + r.fast_failed + r.errors + r.abandoned)
        << "served " << r.served << " timed out " << r.timed_out << " fast " << r.fast_failed << " errors " << r.errors
        << " abandoned " << r.abandoned;
    EXPECT_EQ(r.errors, 0);
    EXPECT_EQ(r.lost_permits, 0);
    EXPECT_GE(r.served, 1);
    EXPECT_EQ(r.max_holders, 1) << "two requests held the one permit at once";
    EXPECT_LE(r.max_busy, workers);
    EXPECT_LE(r.max_waiters, workers);
    ASSERT_FALSE(r.samples.empty());
    for (std::size_t i = 1; i < r.samples.size(); ++i) EXPECT_GE(r.samples[i].t_s, r.samples[i - 1].t_s);
    for (const LoadSample& s : r.samples) {  // (waiters vs busy: two loads, no order between them)
      EXPECT_LE(s.busy, workers);
      EXPECT_LE(s.waiters, workers);
    }
  }
};

TEST_F(LoadTestScenario, RawSemaphoreAccountsForEveryRequestAndExcludes) {
  const LoadConfig c = small(false);
  const LoadResult r = run(c);
  expect_accounted(r, c.workers);
  EXPECT_EQ(r.fast_failed, 0) << "the raw semaphore has no gate";
  EXPECT_EQ(r.guard.acquisitions, 0u);
  // try_set_permits on every request: at least one script per offered
  // request that reached a worker, beyond its acquire.
  EXPECT_GE(r.server.scripts, double(r.offered - r.abandoned));
}

TEST_F(LoadTestScenario, GuardedLockNeverLetsMoreThanMaxWaitersIn) {
  LoadConfig c = small(true);
  c.rate_per_min = 300;  // six times the case study's rate: the gate must close
  c.max_waiters = 2;
  c.workers = 16;
  const LoadResult r = run(c);
  expect_accounted(r, c.workers);
  EXPECT_LE(r.max_gate, c.max_waiters) << "GuardedLock::waiting(key) above the gate's bound";
  EXPECT_GT(r.fast_failed, 0) << "at 300/min and a 5.5 s mean hold the gate is full most of the time";
  EXPECT_EQ(r.guard.initialisations, 1u) << "try_set_permits once per key per process";
  EXPECT_EQ(r.guard.acquisitions, static_cast<std::uint64_t>(r.served));
  EXPECT_LE(r.guard.max_redis_waiters, 1) << "one thread of the process at Redis";
}

TEST_F(LoadTestScenario, ThePhysicalLimitAndTheQueueingModel) {
  LoadConfig one;  // case 1: hold 200-600 ms at 50/min
  EXPECT_DOUBLE_EQ(one.expected_capacity_per_min(), 150.0);
  EXPECT_DOUBLE_EQ(one.expected_success_limit(), 1.0);
  // Pollaczek-Khinchine: (5/6 /s) x E[S^2] 0.17333 s^2 / (2 x (1 - 1/3)).
  EXPECT_NEAR(one.expected_mean_wait_s(), 0.108333, 1e-5);
  LoadConfig two;  // case 2: hold 1-10 s: over capacity
  two.hold_lo_s = 1;
  two.hold_hi_s = 10;
  EXPECT_NEAR(two.expected_capacity_per_min(), 10.909, 1e-3);
  EXPECT_NEAR(two.expected_success_limit(), 0.218, 1e-3);
  EXPECT_LT(two.expected_mean_wait_s(), 0) << "no steady state over capacity";
}

TEST_F(LoadTestScenario, PoissonArrivalsHaveTheRequestedMeanAndRepeat) {
  PoissonArrivals a(50, 100, 7), b(50, 100, 7);
  double sum = 0;
  const int n = 20'000;
  for (int i = 0; i < n; ++i) {
    const double g = a.next_gap_s();
    EXPECT_EQ(g, b.next_gap_s());
    sum += g;
  }
  EXPECT_NEAR(sum / n, 1.2 / 100, 0.012 * 0.05);  // 1.2 s between arrivals at 50/min, / 100
  EXPECT_THROW(PoissonArrivals(0, 1, 1), std::invalid_argument);
}

TEST_F(LoadTestScenario, BadConfigurationsAreRejected) {
  for (auto spoil : std::vector<void (*)(LoadConfig&)>{
           [](LoadConfig& c) { c.time_scale = 0; }, [](LoadConfig& c) { c.workers = 0; },
           [](LoadConfig& c) { c.hold_hi_s = c.hold_lo_s / 2; }, [](LoadConfig& c) { c.lease_s = c.hold_hi_s; },
           [](LoadConfig& c) { c.max_waiters = 0; }, [](LoadConfig& c) { c.run_s = 0; }}) {
    LoadConfig c = small(true);
    spoil(c);
    EXPECT_THROW(run_load_test(client(), client(), c), std::invalid_argument);
  }
}

}  // namespace
}  // namespace locklab::scenarios
