// stock.hpp — the stock test
// (docs/case-studies.md#stock-test-under-a-polling-lock) as a reusable
// engine: a stock of 1,000 in Redis, 1,000 tasks on a pool of 2 x
// hardware_concurrency threads, each task a read-compute-write of the stock
// (GET, decrement in C++, SET), first without a lock and then under each of
// our Redis locks. Header-only so that `scenarios stock` (the table) and
// tests/distributed/stock_scenario_test.cpp (the invariant: every lock ends
// at exactly 0) run the same code.
//
// What the original authors measured
// ----------------------------------
// Two JUnit tests of a Spring service: 1,000 threads on a pool of cores x 2
// decrement a stock of 1,000 in the database. Without a lock "the stock is
// inconsistent" (the case study gives no number); with a Lettuce spin lock
// (`SET NX PX 100`, retry every 50 ms, at most 80 tries / 4 s, Lua
// compare-and-delete) or Redisson's tryLock (lease 100 ms, wait 4 s) the
// final stock is exactly 0. The authors then argue the parameters (lease =
// 10 ms DB + 3 ms network + 87 ms buffer; retry = lease / 2) and propose
// exponential backoff (100, 150, 225 ... ms, capped at 1 s).
//
// What we scale, and why
// ----------------------
// - The stock lives in Redis (a plain string key), not in a database: a
//   read-compute-write through two separate commands is exactly as racy
//   as SELECT-then-UPDATE, and the lock rows then need only Redis. The rows
//   that need no lock at all, one of them on a PostgreSQL row, are in
//   stock_baselines.hpp. The sizes are the
//   case study's (1,000 and 1,000, pool 2 x cores): a run takes 0.1-2.5 s
//   per row on 2 cores, so nothing needs shrinking.
// - The critical section is GET + SET, two loopback round trips (~0.1 ms),
//   against the original ~13 ms of JPA work. We keep the original lease
//   (100 ms) anyway: it is 1,000 x the section here, so a lease only runs
//   out if a holder is descheduled for 100 ms (a badly overloaded machine;
//   it would show as lock_lost and a wrong stock, never silently), and a
//   shorter lease would teach nothing new. Likewise the original 4 s wait
//   for every lock and its 50 ms retry for the first SpinLock row.
// - Without a lock the race needs no help on 2 cores: 4 threads each spend
//   most of a task waiting for a reply, so between one thread's GET and its
//   SET the others' GETs arrive and read the same value. On the 2-core lab
//   machine it lost 636-666 of the 1,000 decrements in each of 8 runs, so
//   `gap` (a pause between read and write that widens the window,
//   `--gap_us`) stays 0 by default; it exists for a machine where the race
//   is rarer, and the printout says when it was used.
// - A task that finds the stock at 0 writes nothing (the original decrease()
//   throws on a negative stock), so the final stock is always in
//   [0, initial] and a lost update shows as a stock ABOVE its true value.
//
// Columns
// -------
// final_stock (0 is right: tasks == stock), decrements (tasks that wrote
// stock - 1 and believed they sold one), lost_updates = decrements -
// (initial - final): decrements another task's stale write erased; wall_ms
// for the whole run, tasks/s (= acquisitions/s with a lock), lock_timeouts
// (a task whose acquire ran out of its 4 s: it sold nothing), errors
// (redis::Error), lock_lost (unlock() found the lease gone), and Redis round
// trips per task (Client::round_trips(): the lock's polling, scripts and
// BLPOPs plus the GET and SET; the pub/sub connection's SUBSCRIBE is not
// counted).
//
// What the result teaches
// -----------------------
// Without a lock about two thirds of the decrements are lost: the shop sold
// the same item to several buyers, and the stock says ~650 are left when
// none are. Any of our locks gives exactly 0. They differ in what the
// exclusion costs. Round trips per task are steady from run to run; wall
// times on the 2-core lab machine (busy with other builds, load average
// 3-8; four quick runs) were not, so read them as ranges:
// - SpinLock with the original 50 ms retry (350-610 ms for 1,000 tasks) is
//   not slow here, and that is a lesson about barging, not about polling:
//   the thread that just released takes its next task and re-acquires at
//   once while the other three sleep through their 50 ms, so one thread
//   runs task after task, and the run passes to another only when a poll
//   happens to land in a gap (a few times per run: tasks per thread like
//   803/195/1/1 or 493/279/227/1 in a side experiment; 15-37 failed polls in
//   1,000 tasks, hence 4.0 round trips per task). Fast, and unfair.
// - SpinLock with the original backoff (0.4-2.5 s) has the same round trips
//   and a longer, erratic tail: at the end the last waiters are asleep for
//   up to 1 s each, whether or not the lock is free.
// - PubSubLock (0.2-1.7 s) costs 5 round trips a task: GET, SET, the
//   release and two acquire attempts, one that fails and one after the
//   pub/sub wake-up (which itself is not counted).
// - AdaptiveLock (0.7-1.6 s) costs 7.5-12: its waiters spin SET NX for up
//   to 5 ms, and on 2 cores the spinning threads and their Redis commands
//   compete with the holder's GET and SET.
// - FairLock (0.4-0.7 s) hands the lock to the oldest waiter on every
//   release (5 round trips a task): strict FIFO, nobody starves, at the
//   price of a hand-off per task.
// Correctness first (final stock, lost updates), then the bill (round
// trips, wall time).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "benches/harness/redis_lock_registry.hpp"
#include "distributed/client.hpp"
#include "distributed/error.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::scenarios::stock {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct StockConfig {
  int stock = 1'000;
  int tasks = 1'000;
  int threads = 0;  // 0: 2 x hardware_concurrency, the case study's pool
  std::chrono::milliseconds lease{100};
  std::chrono::milliseconds lock_timeout{4'000};
  // Pause between the GET and the SET; 0 = none (see the essay).
  std::chrono::microseconds gap{0};
  // A hang detector: after it, threads take no new task (counted as not_run).
  std::chrono::milliseconds run_cap{60'000};
  std::string key = "locklab:stock";
};

struct StockResult {
  std::string lock;
  int threads = 0;
  std::int64_t initial = 0, final_stock = 0, decrements = 0, sold_out = 0, lock_timeouts = 0, errors = 0,
               lock_lost = 0, not_run = 0;
  // Optimistic rows only (stock_baselines.hpp): writes refused because
  // another task changed the row first, each followed by a retry.
  std::int64_t retries = 0;
  double wall_ms = 0, round_trips_per_task = 0;
  // One task, from taking it off the queue to its outcome (lock wait, read,
  // write, release; or the baseline's atomic step with its retries).
  double task_p50_ms = 0, task_p95_ms = 0;
  std::int64_t lost_updates() const { return decrements - (initial - final_stock); }
  // Sales the stock did not cover: a lost update sold an item that is still
  // counted as in stock (it will be sold again), a negative stock sold items
  // that never existed. 0 is right.
  std::int64_t oversold() const { return lost_updates() + std::max<std::int64_t>(0, -final_stock); }
  double tasks_per_second() const {
    const std::int64_t done = decrements + sold_out;
    return wall_ms > 0 ? static_cast<double>(done) * 1e3 / wall_ms : 0;
  }
};

namespace detail {

// The no-lock row goes through the same task loop as the locks.
class NoLock final : public bench::AnyRedisLock {
 public:
  void lock() override {}
  void unlock() override {}
  bool try_lock() override { return true; }
  bool try_lock_for(std::chrono::milliseconds) override { return true; }
};

// The p-th fraction (0..1) of `ms`, nearest rank; 0 for none.
inline double percentile_ms(std::vector<double> ms, double p) {
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  return ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ms.size())))];
}

inline std::int64_t read_stock(redis::Client& c, const std::string& key) {
  redis::Reply r = c.command({"GET", key});
  if (r.is_nil()) throw std::runtime_error("stock scenario: the key " + key + " is missing");
  return std::stoll(r.as_string());
}

template <class Lock>
StockResult run_with(redis::Client& client, Lock& lock, const StockConfig& c, int threads) {
  std::atomic<int> next{0};
  std::atomic<std::int64_t> decrements{0}, sold_out{0}, timeouts{0}, errors{0}, lost{0}, not_run{0};
  const std::uint64_t rt0 = client.round_trips();
  const auto start = Clock::now();
  const auto cap = start + c.run_cap;
  std::vector<std::vector<double>> task_ms(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int task = next.fetch_add(1); task < c.tasks; task = next.fetch_add(1)) {
        const auto task_start = Clock::now();
        if (task_start >= cap) {
          not_run.fetch_add(1);
          continue;
        }
        try {
          if (!lock.try_lock_for(c.lock_timeout)) {
            timeouts.fetch_add(1);
            continue;
          }
        } catch (const std::exception&) {  // redis::Error; misuse would be a bug, counted too
          errors.fetch_add(1);
          continue;
        }
        try {
          const std::int64_t s = read_stock(client, c.key);
          if (c.gap.count() > 0) std::this_thread::sleep_for(c.gap);
          if (s > 0) {
            client.command({"SET", c.key, std::to_string(s - 1)});
            decrements.fetch_add(1);
          } else {
            sold_out.fetch_add(1);
          }
        } catch (const std::exception&) {  // redis::Error, or the key gone (a flushed server)
          errors.fetch_add(1);
        }
        try {
          lock.unlock();
        } catch (const redis::LockLost&) {
          lost.fetch_add(1);
        } catch (const std::exception&) {
          errors.fetch_add(1);
        }
        task_ms[static_cast<std::size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - task_start).count());
      }
    });
  }
  for (auto& t : pool) t.join();
  StockResult r;
  std::vector<double> all_ms;
  for (auto& v : task_ms) all_ms.insert(all_ms.end(), v.begin(), v.end());
  r.task_p50_ms = percentile_ms(all_ms, 0.50);
  r.task_p95_ms = percentile_ms(all_ms, 0.95);
  r.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  r.round_trips_per_task =
      static_cast<double>(client.round_trips() - rt0) / static_cast<double>(std::max(1, c.tasks));
  r.threads = threads;
  r.initial = c.stock;
  r.final_stock = read_stock(client, c.key);
  r.decrements = decrements.load();
  r.sold_out = sold_out.load();
  r.lock_timeouts = timeouts.load();
  r.errors = errors.load();
  r.lock_lost = lost.load();
  r.not_run = not_run.load();
  return r;
}

}  // namespace detail

// A row of the table: its name and how to build its lock (nullptr: the
// no-lock row) for a config and a lock key.
struct StockRow {
  std::string name;
  std::function<std::unique_ptr<bench::AnyRedisLock>(redis::Client&, const std::string&, const StockConfig&)> make;
};

// The table's rows, in order: the lesson first ("none"), then every lock of
// the registry (benches/redis_locks.json) with the config's lease, SpinLock
// as the case study's two strategies.
inline std::vector<StockRow> stock_rows() {
  std::vector<StockRow> rows;
  rows.push_back({"none", nullptr});
  bench::for_each_redis_lock([&]<class L>(const bench::RedisLockInfo& info) {
    const std::string name(info.name);
    if constexpr (std::is_same_v<L, redis::SpinLock>) {
      rows.push_back({name + "(poll:50ms)", [](redis::Client& client, const std::string& key, const StockConfig& c) {
                        redis::SpinLock::Options so;  // the case study's: fixed 50 ms retry
                        so.lease = c.lease;
                        so.retry_interval = 50ms;
                        return std::make_unique<bench::ErasedRedisLock<L>>(client, key, so);
                      }});
      rows.push_back({name + "(backoff)", [](redis::Client& client, const std::string& key, const StockConfig& c) {
                        // The case study's backoff: 100, 150, 225 ... ms, capped at 1 s.
                        redis::SpinLock::Options so;
                        so.lease = c.lease;
                        so.retry_interval = 100ms;
                        so.backoff = redis::SpinLock::Backoff::kExponential;
                        so.multiplier = 1.5;
                        so.max_interval = 1'000ms;
                        so.jitter = 0.5;  // waiters that failed together do not retry together
                        return std::make_unique<bench::ErasedRedisLock<L>>(client, key, so);
                      }});
    } else {
      // PubSubLock: Redisson tryLock(wait, lease), a fixed lease, no watchdog;
      // AdaptiveLock: the k6 lock table's spin budget, 5 ms in [0.2, 20] ms.
      rows.push_back({name, [](redis::Client& client, const std::string& key, const StockConfig& c) {
                        return std::make_unique<bench::ErasedRedisLock<L>>(
                            client, key, bench::redis_lock_options<L>({.lease = c.lease}));
                      }});
    }
  });
  return rows;
}

// The row called `name`; std::invalid_argument naming the rows otherwise.
inline StockRow stock_row(const std::string& name) { return bench::row_named(stock_rows(), name, "stock scenario"); }

// One run: sets the stock, runs the tasks under `row`'s lock, reads the
// stock back. `server` names a Redis this run may write `c.key` and the keys
// under `c.key + ":lock:"` on (the scenario's own EmbeddedServer). Throws
// redis::Error if the server cannot be reached at all.
inline StockResult run_stock(const redis::Client::Options& server, const StockRow& row, const StockConfig& c) {
  if (c.stock < 0 || c.tasks < 0 || c.threads < 0) throw std::invalid_argument("stock scenario: negative size");
  const int threads =
      c.threads > 0 ? c.threads : 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  redis::Client::Options o = server;
  o.command_timeout = 2s;
  // A FairLock waiter keeps a pooled connection inside BLPOP.
  o.max_connections = std::max<std::size_t>(o.max_connections, static_cast<std::size_t>(threads) + 8);
  redis::Client client(o);
  const std::string lock_name = c.key + ":lock:" + row.name;
  client.command({"DEL", c.key, lock_name});
  client.command({"SET", c.key, std::to_string(c.stock)});

  std::unique_ptr<bench::AnyRedisLock> lock = row.make ? row.make(client, lock_name, c)
                                                       : std::make_unique<detail::NoLock>();
  StockResult r = detail::run_with(client, *lock, c, threads);
  r.lock = row.name;
  return r;
}

}  // namespace locklab::scenarios::stock
