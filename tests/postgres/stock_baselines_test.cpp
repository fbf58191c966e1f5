// The stock test's baselines without a lock (benches/scenarios/stock_baselines.hpp)
// at small sizes on their own servers (an EmbeddedPostgres and a
// redis-server): each of the three sells exactly the stock and never
// oversells, with more buyers than items so that the floor is exercised, and
// counts its round trips. Nothing here asserts a speed.
#include "benches/scenarios/stock_baselines.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "distributed/embedded_server.hpp"
#include "tests/postgres/postgres_test_support.hpp"

namespace locklab::pg::testing {
namespace {

namespace stock = scenarios::stock;

class StockBaselines : public PostgresTest {
 protected:
  static void SetUpTestSuite() {
    PostgresTest::SetUpTestSuite();
    redis_ = std::make_unique<redis::EmbeddedServer>();
  }
  static void TearDownTestSuite() {
    redis_.reset();
    PostgresTest::TearDownTestSuite();
  }
  stock::BaselineServers servers() { return {redis_->client_options(), server().connection_options()}; }
  static stock::StockConfig small(const std::string& key) {
    stock::StockConfig c;
    c.stock = 60;
    c.tasks = 100;  // 40 buyers find it sold out
    c.threads = 4;
    c.key = key;
    return c;
  }
  static inline std::unique_ptr<redis::EmbeddedServer> redis_;
};

TEST_F(StockBaselines, EachSellsExactlyTheStockAndNeverOversells) {
  const auto rows = stock::baseline_rows();
  ASSERT_EQ(rows.size(), 3u);
  for (const stock::BaselineRow& row : rows) {
    SCOPED_TRACE(row.name);
    const stock::StockResult r = stock::run_baseline(servers(), row, small("stock:" + row.name));
    EXPECT_EQ(r.lock, row.name);
    EXPECT_EQ(r.final_stock, 0);
    EXPECT_EQ(r.decrements, 60);
    EXPECT_EQ(r.sold_out, 40);
    EXPECT_EQ(r.lost_updates(), 0);
    EXPECT_EQ(r.oversold(), 0);
    EXPECT_EQ(r.errors, 0);
    EXPECT_EQ(r.not_run, 0);
    EXPECT_EQ(r.threads, 4);
    EXPECT_GT(r.task_p50_ms, 0.0);
    EXPECT_LE(r.task_p50_ms, r.task_p95_ms);
  }
}

TEST_F(StockBaselines, TheAtomicRowsCostOneRoundTripATaskAndTheOptimisticOneTwoPlusTwoPerRetry) {
  for (const char* name : {"UPDATE(qty>0)", "DECR(floor,Lua)"}) {
    SCOPED_TRACE(name);
    const stock::StockResult r = stock::run_baseline(servers(), stock::baseline_row(name), small(std::string("rt:") + name));
    // The Redis row may add a SCRIPT LOAD per pool thread (4): threads
    // whose first eval races the Client's SHA cache each load the script.
    // The half keeps the bound clear of rounding: 105 round trips fail.
    EXPECT_GE(r.round_trips_per_task, 1.0);
    EXPECT_LE(r.round_trips_per_task, 1.0 + (4 + 0.5) / 100);
    EXPECT_EQ(r.retries, 0);
  }
  const stock::StockResult r =
      stock::run_baseline(servers(), stock::baseline_row("UPDATE(version)+retry"), small("rt:optimistic"));
  // 60 sales of SELECT + UPDATE, 40 sold-out reads, 2 more per lost race.
  EXPECT_DOUBLE_EQ(r.round_trips_per_task, (60 * 2 + 40 + 2 * static_cast<double>(r.retries)) / 100);
}

TEST_F(StockBaselines, AMissingRedisStockIsAnErrorNotASale) {
  stock::detail::RedisDecrFloor store(redis_->client_options(), "missing-stock");
  auto s = store.seller();
  EXPECT_THROW(s->sell(), redis::Error);
}

}  // namespace
}  // namespace locklab::pg::testing
