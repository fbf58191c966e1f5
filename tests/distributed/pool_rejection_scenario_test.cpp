// The invariants of the drained thread pool (benches/scenarios/
// pool_rejection.hpp): the executor follows ThreadPoolExecutor's rule
// (core, queue, max, reject) exactly; every request and every task is
// accounted for; one holder at a time; a zero-wait refresh sends exactly one
// acquire script and never subscribes (it never waits on Redis); a blocking
// refresh during a long reload fills the pool and gets tasks rejected. No
// wall-clock assertions.
#include "benches/scenarios/pool_rejection.hpp"

#include <gtest/gtest.h>

#include <future>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::scenarios {
namespace {

using namespace std::chrono_literals;

TEST(BoundedExecutor, CoreThenQueueThenMaxThenReject) {
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> ran{0};
  BoundedExecutor pool(2, 8, 50);
  auto task = [&] {
    gate.wait();
    ran.fetch_add(1);
  };
  std::vector<bool> accepted;
  for (int i = 0; i < 60; ++i) accepted.push_back(pool.submit(task));
  // 2 core threads, 50 queued, 6 more threads up to 8, then rejections.
  EXPECT_EQ(pool.threads(), 8);
  EXPECT_EQ(pool.max_queued(), 50u);
  EXPECT_EQ(pool.accepted(), 58u);
  EXPECT_EQ(pool.rejected(), 2u);
  for (int i = 0; i < 58; ++i) EXPECT_TRUE(accepted[static_cast<std::size_t>(i)]) << i;
  EXPECT_FALSE(accepted[58]);
  EXPECT_FALSE(accepted[59]);
  go.set_value();
  pool.shutdown();
  EXPECT_EQ(ran.load(), 58) << "shutdown runs what was queued";
  EXPECT_EQ(pool.completed(), 58u);
  EXPECT_FALSE(pool.submit(task)) << "no submissions after shutdown";
  EXPECT_THROW(BoundedExecutor(3, 2, 1), std::invalid_argument);
}

class PoolRejectionScenario : public redis::testing::RedisTest {
 protected:
  PoolConfig small(double wait_s) {
    PoolConfig c;
    c.run_s = 4;
    c.time_scale = 20;  // 0.2 s
    c.wait_s = wait_s;
    c.key = key();
    return c;
  }
  PoolResult run(const PoolConfig& c) {
    redis::Client::Options o = options();
    o.command_timeout = 10s;
    redis::Client pool_client(o);
    return run_pool_rejection(pool_client, client(), c);
  }
  static void expect_accounted(const PoolResult& r) {
    EXPECT_GT(r.requests, 0);
    EXPECT_EQ(r.requests, r.served + r.rejected);
    EXPECT_EQ(r.tasks_submitted, r.tasks_run + r.rejected) << "every task accepted ran (shutdown drains)";
    EXPECT_EQ(r.tasks_run, r.acquisitions + r.lock_busy + r.errors);
    EXPECT_EQ(r.errors, 0);
    EXPECT_EQ(r.max_holders, 1) << "two refreshes held the lock at once";
    EXPECT_GE(r.reloads, 1);
    EXPECT_LE(r.reloads, r.stampedes) << "at most one reload per stale period";
    EXPECT_LE(r.max_threads, 8);
    EXPECT_LE(r.max_queued, 50);
  }
};

TEST_F(PoolRejectionScenario, AZeroWaitSendsOneScriptAndNeverSubscribes) {
  const PoolResult r = run(small(0));
  expect_accounted(r);
  EXPECT_EQ(r.server.subscribes, 0) << "try_lock_for(0) must not wait on Redis";
  EXPECT_EQ(r.lock_attempts, static_cast<std::uint64_t>(r.tasks_run)) << "exactly one acquire script per refresh";
}

TEST_F(PoolRejectionScenario, ABlockingWaitDuringALongReloadFillsThePool) {
  PoolConfig c = small(3);
  c.reload_s = 1;  // 50 ms here, while ~260 stale reads submit a refresh each
  const PoolResult r = run(c);
  expect_accounted(r);
  EXPECT_GT(r.rejected, 0) << "8 threads + 50 queued cannot absorb the stampede";
  EXPECT_EQ(r.max_threads, 8);
  EXPECT_GE(r.server.subscribes, 1) << "blocked refreshes wait on the release channel";
}

TEST_F(PoolRejectionScenario, BadConfigurationsAreRejected) {
  PoolConfig c = small(0);
  c.lease_s = c.reload_s;
  EXPECT_THROW(run_pool_rejection(client(), client(), c), std::invalid_argument);
  c = small(0);
  c.time_scale = 0;
  EXPECT_THROW(run_pool_rejection(client(), client(), c), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::scenarios
