// stock_baselines.hpp — "do you need a lock?": the stock test
// (stock.hpp, docs/case-studies.md#stock-test-under-a-polling-lock) done
// with no distributed lock at all, by asking the store that holds the stock
// to decrement it in one atomic step. Same sizes, same pool, same columns
// as the lock rows, so `scenarios stock` prints them in one table and
// writes them into one scenario_stock.json.
//
// The three rows
// --------------
//   UPDATE(qty>0)          PostgreSQL, one statement per task:
//                            UPDATE stock SET qty = qty - 1 WHERE id = $1 AND qty > 0
//                          The row lock PostgreSQL takes for the UPDATE
//                          serialises concurrent tasks on that row; a task
//                          that waited re-reads the committed row (READ
//                          COMMITTED re-checks the WHERE clause on the new
//                          version), so the floor holds. One row updated:
//                          sold; none: sold out. 1 round trip a task.
//   UPDATE(version)+retry  PostgreSQL, optimistic: SELECT qty, version, then
//                            UPDATE stock SET qty = $2, version = version + 1
//                            WHERE id = $1 AND version = $3
//                          which writes only if nobody wrote since the read;
//                          0 rows updated means "someone did", and the task
//                          reads again and retries (counted as retries). No
//                          lock is held between the two statements, so the
//                          cost of contention is paid in retries: 2 round
//                          trips a task without contention, 2 more per retry.
//   DECR(floor,Lua)        Redis, one script per task (Client::eval):
//                            GET; if > 0 then DECR
//                          Redis runs a script alone, so the check and the
//                          decrement are one step. 1 round trip a task
//                          (plus a SCRIPT LOAD per pool thread whose first
//                          call races the Client's SHA cache).
// A plain DECR would not do: it decrements past 0 (oversells) and needs a
// compensating INCR, which another task can observe in between.
//
// What each teaches (the numbers are in the JSON, read by notebook 08)
// ---------------------------------------------------------------------
// Each ends at exactly 0 with nothing oversold, like every lock row, at 1
// round trip a task (2 for the optimistic read-then-write, plus retries)
// against the lock rows' 4-12, and without a lease that can run out under
// a paused holder. A lock earns its cost only when the critical section
// cannot be expressed as one conditional write at the store: several
// stores, a slow external call, a decision the store cannot compute.
//
// Connections
// -----------
// Each pool thread gets its own PostgreSQL connection (a session runs one
// statement at a time), opened before the clock starts; the Redis row
// shares one Client, as the lock rows do. Round trips are counted by the
// store: statements sent on the PostgreSQL connections, Client::round_trips()
// for Redis.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "benches/scenarios/stock.hpp"
#include "distributed/client.hpp"
#include "distributed/script.hpp"
#include "postgres/connection.hpp"

namespace locklab::scenarios::stock {

// What one task's sale did.
enum class Sale { kSold, kSoldOut };

// One pool thread's way to sell one item (its own connection where the
// store needs one). sell() throws on a store error; it never waits for a
// lock of ours.
class Seller {
 public:
  virtual ~Seller() = default;
  virtual Sale sell() = 0;
};

// The stock at one store, for one run.
class StockStore {
 public:
  virtual ~StockStore() = default;
  // Sets the stock (creating what the store needs); not timed.
  virtual void reset(std::int64_t stock) = 0;
  virtual std::int64_t read() = 0;
  // A seller for one pool thread; built before the run starts.
  virtual std::unique_ptr<Seller> seller() = 0;
  // Round trips sent so far by this store's sellers.
  virtual std::uint64_t round_trips() const = 0;
  // Optimistic writes refused and retried so far (0 for the atomic rows).
  virtual std::uint64_t retries() const { return 0; }
};

// ----------------------------------------------------------- Redis: DECR with a floor

namespace detail {

// KEYS[1] = the stock. Returns the stock after the sale, or -1 when there
// was none to sell. A missing or non-integer stock is an error reply
// (Error(kServer) at the client), never a silent sale.
inline const redis::Script& decr_floor_script() {
  static const redis::Script script("stock.decr_floor", R"lua(
local v = tonumber(redis.call('GET', KEYS[1]))
if v == nil then return redis.error_reply('stock key missing or not an integer') end
if v <= 0 then return -1 end
return redis.call('DECR', KEYS[1])
)lua");
  return script;
}

class RedisDecrFloor final : public StockStore {
 public:
  RedisDecrFloor(const redis::Client::Options& o, std::string key) : client_(o), key_(std::move(key)) {}

  void reset(std::int64_t stock) override { client_.command({"SET", key_, std::to_string(stock)}); }
  std::int64_t read() override { return read_stock(client_, key_); }
  std::uint64_t round_trips() const override { return client_.round_trips(); }

  std::unique_ptr<Seller> seller() override {
    struct S final : Seller {
      RedisDecrFloor* store;
      explicit S(RedisDecrFloor* s) : store(s) {}
      Sale sell() override {
        const std::int64_t left = store->client_.eval(decr_floor_script(), {store->key_}, {}).as_integer();
        return left >= 0 ? Sale::kSold : Sale::kSoldOut;
      }
    };
    return std::make_unique<S>(this);
  }

 private:
  redis::Client client_;
  std::string key_;
};

// ------------------------------------------------ PostgreSQL: one row per stock

// The table both PostgreSQL rows use: one row per stock, named by the
// config's key (so concurrent tests with their own keys do not meet).
inline constexpr const char* kStockTable = "locklab_stock";

// The stock row and the connections of one PostgreSQL run.
class PgStock : public StockStore {
 public:
  PgStock(const pg::Connection::Options& o, std::string key) : options_(o), setup_(o), key_(std::move(key)) {}

  void reset(std::int64_t stock) override {
    if (setup_.exec(std::string("SELECT to_regclass('") + kStockTable + "') IS NULL").text(0, 0) == "t") {
      setup_.exec(std::string("CREATE TABLE IF NOT EXISTS ") + kStockTable +
                  " (name text PRIMARY KEY, qty bigint NOT NULL, version bigint NOT NULL)");
    }
    setup_.exec(std::string("INSERT INTO ") + kStockTable +
                    " (name, qty, version) VALUES ($1, $2, 0) "
                    "ON CONFLICT (name) DO UPDATE SET qty = EXCLUDED.qty, version = 0",
                {key_, static_cast<long long>(stock)});
  }
  std::int64_t read() override {
    return setup_.exec(std::string("SELECT qty FROM ") + kStockTable + " WHERE name = $1", {key_}).int64(0, 0);
  }
  std::uint64_t round_trips() const override { return sent_.load(std::memory_order_relaxed); }
  std::uint64_t retries() const override { return retries_.load(std::memory_order_relaxed); }

 protected:
  // A seller's own session, counting what it sends into the store's total.
  class Session {
   public:
    Session(PgStock* store) : store_(store), connection_(store->options_) {}
    pg::Result exec(std::string_view sql, const std::vector<pg::Param>& params) {
      store_->sent_.fetch_add(1, std::memory_order_relaxed);
      return connection_.exec(sql, params);
    }
    PgStock& store() { return *store_; }

   private:
    PgStock* store_;
    pg::Connection connection_;
  };
  const std::string& key() const noexcept { return key_; }
  void count_retry() { retries_.fetch_add(1, std::memory_order_relaxed); }

 private:
  pg::Connection::Options options_;
  pg::Connection setup_;  // reset() and read(): not counted as the tasks' round trips
  std::string key_;
  std::atomic<std::uint64_t> sent_{0}, retries_{0};
};

class PgAtomicUpdate final : public PgStock {
 public:
  using PgStock::PgStock;
  std::unique_ptr<Seller> seller() override {
    struct S final : Seller {
      Session session;
      explicit S(PgStock* store) : session(store) {}
      Sale sell() override {
        const auto& key = static_cast<PgAtomicUpdate&>(session.store()).key();
        const std::int64_t updated =
            session.exec(std::string("UPDATE ") + kStockTable + " SET qty = qty - 1 WHERE name = $1 AND qty > 0", {key})
                .affected();
        return updated == 1 ? Sale::kSold : Sale::kSoldOut;
      }
    };
    return std::make_unique<S>(this);
  }
};

class PgOptimisticVersion final : public PgStock {
 public:
  // A task that loses this many races in a row gives up (an error, counted):
  // a bound against a livelock, not a tuning. Three runs of the scenario on
  // the loaded 2-core lab machine saw 649-833 retries in 1,000 tasks on 4
  // threads, under one per task on average, so a task losing 1,000 in a
  // row means something else is wrong.
  static constexpr int kMaxRetries = 1'000;

  using PgStock::PgStock;
  std::unique_ptr<Seller> seller() override {
    struct S final : Seller {
      Session session;
      explicit S(PgStock* store) : session(store) {}
      Sale sell() override {
        auto& store = static_cast<PgOptimisticVersion&>(session.store());
        for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
          const pg::Result row =
              session.exec(std::string("SELECT qty, version FROM ") + kStockTable + " WHERE name = $1", {store.key()});
          const std::int64_t qty = row.int64(0, 0), version = row.int64(0, 1);
          if (qty <= 0) return Sale::kSoldOut;
          // Writes only if nobody wrote since the read; the decision
          // (qty - 1) was made here, in the client, as in the lock rows.
          const std::int64_t updated =
              session
                  .exec(std::string("UPDATE ") + kStockTable +
                            " SET qty = $2, version = version + 1 WHERE name = $1 AND version = $3",
                        {store.key(), static_cast<long long>(qty - 1), static_cast<long long>(version)})
                  .affected();
          if (updated == 1) return Sale::kSold;
          store.count_retry();
        }
        throw std::runtime_error("optimistic stock update: lost " + std::to_string(kMaxRetries + 1) +
                                 " races in a row");
      }
    };
    return std::make_unique<S>(this);
  }
};

}  // namespace detail

// Where the baselines' stores are: the scenario's own servers.
struct BaselineServers {
  redis::Client::Options redis;
  pg::Connection::Options pg;
};

// A row of the table without a lock.
struct BaselineRow {
  std::string name;
  std::string store;  // "PostgreSQL" or "Redis", for the printout
  std::function<std::unique_ptr<StockStore>(const BaselineServers&, const StockConfig&, int threads)> make;
};

inline std::vector<BaselineRow> baseline_rows() {
  std::vector<BaselineRow> rows;
  rows.push_back({"UPDATE(qty>0)", "PostgreSQL", [](const BaselineServers& s, const StockConfig& c, int) {
                    return std::make_unique<detail::PgAtomicUpdate>(s.pg, c.key);
                  }});
  rows.push_back({"UPDATE(version)+retry", "PostgreSQL", [](const BaselineServers& s, const StockConfig& c, int) {
                    return std::make_unique<detail::PgOptimisticVersion>(s.pg, c.key);
                  }});
  rows.push_back({"DECR(floor,Lua)", "Redis", [](const BaselineServers& s, const StockConfig& c, int threads) {
                    redis::Client::Options o = s.redis;
                    o.command_timeout = std::chrono::seconds(2);
                    o.max_connections = std::max<std::size_t>(o.max_connections, static_cast<std::size_t>(threads) + 2);
                    return std::make_unique<detail::RedisDecrFloor>(o, c.key);
                  }});
  return rows;
}

inline BaselineRow baseline_row(const std::string& name) {
  return bench::row_named(baseline_rows(), name, "stock baselines");
}

// One run of a baseline row: the same pool, task queue and run cap as the
// lock rows (detail::run_with), each task one sale at the store.
inline StockResult run_baseline(const BaselineServers& servers, const BaselineRow& row, const StockConfig& c) {
  if (c.stock < 0 || c.tasks < 0 || c.threads < 0) throw std::invalid_argument("stock scenario: negative size");
  const int threads =
      c.threads > 0 ? c.threads : 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<StockStore> store = row.make(servers, c, threads);
  store->reset(c.stock);
  std::vector<std::unique_ptr<Seller>> sellers;
  for (int t = 0; t < threads; ++t) sellers.push_back(store->seller());

  std::atomic<int> next{0};
  std::atomic<std::int64_t> sold{0}, sold_out{0}, errors{0}, not_run{0};
  std::vector<std::vector<double>> task_ms(static_cast<std::size_t>(threads));
  const std::uint64_t rt0 = store->round_trips();
  const std::uint64_t retries0 = store->retries();
  const auto start = Clock::now();
  const auto cap = start + c.run_cap;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Seller& seller = *sellers[static_cast<std::size_t>(t)];
      for (int task = next.fetch_add(1); task < c.tasks; task = next.fetch_add(1)) {
        const auto task_start = Clock::now();
        if (task_start >= cap) {
          not_run.fetch_add(1);
          continue;
        }
        try {
          (seller.sell() == Sale::kSold ? sold : sold_out).fetch_add(1);
        } catch (const std::exception&) {  // the store's typed error: counted, the run goes on
          errors.fetch_add(1);
          continue;
        }
        task_ms[static_cast<std::size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - task_start).count());
      }
    });
  }
  for (auto& t : pool) t.join();
  StockResult r;
  r.lock = row.name;
  r.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  r.round_trips_per_task =
      static_cast<double>(store->round_trips() - rt0) / static_cast<double>(std::max(1, c.tasks));
  r.retries = static_cast<std::int64_t>(store->retries() - retries0);
  std::vector<double> all_ms;
  for (auto& v : task_ms) all_ms.insert(all_ms.end(), v.begin(), v.end());
  r.task_p50_ms = detail::percentile_ms(all_ms, 0.50);
  r.task_p95_ms = detail::percentile_ms(all_ms, 0.95);
  r.threads = threads;
  r.initial = c.stock;
  r.final_stock = store->read();
  r.decrements = sold.load();
  r.sold_out = sold_out.load();
  r.errors = errors.load();
  r.not_run = not_run.load();
  return r;
}

}  // namespace locklab::scenarios::stock
