// The case studies' load experiments (benches/scenarios/stock.hpp and
// vus_table.hpp) at small sizes on a real redis-server: under every lock the
// stock ends at exactly 0 with every decrement accounted for; without a lock
// it stays within [0, initial] (how much is lost is luck, not asserted); and
// every cell of the latency table times every request it sent, each one
// acquired. Nothing here asserts a speed.
#include "benches/scenarios/stock.hpp"

#include <gtest/gtest.h>

#include "benches/scenarios/vus_table.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::scenarios {
namespace {

using redis::testing::RedisTest;

class StockScenario : public RedisTest {
 protected:
  static stock::StockConfig small() {
    stock::StockConfig c;
    c.stock = 100;
    c.tasks = 100;
    // Generous under sanitizers and a busy machine: this test is about
    // exclusion, not about a lease running out under a descheduled holder.
    c.lease = std::chrono::milliseconds(5'000);
    c.lock_timeout = std::chrono::milliseconds(30'000);
    c.key = key("stock");
    return c;
  }
};

TEST_F(StockScenario, EveryLockEndsAtExactlyZero) {
  for (const stock::StockRow& row : stock::stock_rows()) {
    if (row.name == "none") continue;
    SCOPED_TRACE(row.name);
    const stock::StockResult r = stock::run_stock(options(), row, small());
    EXPECT_EQ(r.final_stock, 0);
    EXPECT_EQ(r.decrements, 100);
    EXPECT_EQ(r.lost_updates(), 0);
    EXPECT_EQ(r.sold_out, 0);
    EXPECT_EQ(r.lock_timeouts, 0);
    EXPECT_EQ(r.lock_lost, 0);
    EXPECT_EQ(r.errors, 0);
    EXPECT_EQ(r.not_run, 0);
    EXPECT_GE(r.threads, 2);
    // GET and SET at least, plus an acquire and a release per task.
    EXPECT_GE(r.round_trips_per_task, 4.0);
    EXPECT_EQ(client().command({"EXISTS", small().key + ":lock:" + r.lock}).as_integer(), 0)
        << "the lock key outlived the run";
  }
}

TEST_F(StockScenario, WithoutALockTheStockStaysWithinItsBoundsAndLossesAreCounted) {
  const stock::StockResult r = stock::run_stock(options(), stock::stock_row("none"), small());
  EXPECT_GE(r.final_stock, 0);
  EXPECT_LE(r.final_stock, 100);
  // A lost update leaves the stock above 0, so every task sees stock > 0 and writes.
  EXPECT_EQ(r.decrements, 100);
  EXPECT_EQ(r.lost_updates(), r.final_stock);
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(r.round_trips_per_task, 2.0);
}

TEST_F(StockScenario, MoreTasksThanStockSellOutAndNeverGoNegative) {
  stock::StockConfig c = small();
  c.stock = 30;
  c.tasks = 50;
  const stock::StockResult r = stock::run_stock(options(), stock::stock_row("FairLock"), c);
  EXPECT_EQ(r.final_stock, 0);
  EXPECT_EQ(r.decrements, 30);
  EXPECT_EQ(r.sold_out, 20);
  EXPECT_EQ(r.lost_updates(), 0);
}

TEST_F(StockScenario, AGapBetweenReadAndWriteIsHonoured) {
  stock::StockConfig c = small();
  c.tasks = c.stock = 20;
  c.threads = 1;  // one thread: 20 gaps back to back
  c.gap = std::chrono::microseconds(2'000);
  const stock::StockResult r = stock::run_stock(options(), stock::stock_row("SpinLock(poll:50ms)"), c);
  EXPECT_EQ(r.final_stock, 0);
  EXPECT_GE(r.wall_ms, 20 * 2.0);  // a lower bound that sleep_for guarantees, not a speed
}

class VusTable : public RedisTest {};

TEST_F(VusTable, EveryRequestIsAcquiredAndTimedOnOneAndFiveVus) {
  for (int n : {1, 5}) {
    for (const vus::VuLock& l : vus::vu_locks()) {
      SCOPED_TRACE(l.name + " x " + std::to_string(n));
      vus::VusConfig c;
      c.vus = n;
      c.requests = 12;
      c.key = key("vus");
      const vus::VusResult r = vus::run_vus(options(), l, c);
      EXPECT_EQ(r.vus, n);
      EXPECT_EQ(r.requests, 12);
      EXPECT_EQ(r.acquired, 12);
      EXPECT_EQ(r.lock_timeouts, 0);
      EXPECT_EQ(r.lock_lost, 0);
      EXPECT_EQ(r.errors, 0);
      EXPECT_EQ(r.not_run, 0);
      // Every request holds 1 ms, which sleep_for guarantees at least.
      EXPECT_GE(r.p50_ms, 1.0);
      EXPECT_LE(r.p50_ms, r.p95_ms);
      EXPECT_LE(r.p95_ms, r.p99_ms);
      EXPECT_LE(r.p99_ms, r.max_ms + 1e-9);
      EXPECT_GE(r.avg_ms, 1.0);
      EXPECT_LE(r.avg_ms, r.max_ms + 1e-9);
      EXPECT_GT(r.acquisitions_per_second(), 0.0);
      EXPECT_GE(r.round_trips_per_request, 2.0);
    }
  }
}

TEST_F(VusTable, BadSizesAreRejected) {
  vus::VusConfig c;
  c.vus = 0;
  EXPECT_THROW(vus::run_vus(options(), vus::vu_lock("FairLock"), c), std::invalid_argument);
  c.vus = 1;
  c.requests = 0;
  EXPECT_THROW(vus::run_vus(options(), vus::vu_lock("FairLock"), c), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::scenarios
