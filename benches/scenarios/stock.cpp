// stock.cpp — `scenarios stock`: the stock test without a lock, under each
// of our locks and beside the lock-free baselines (stock.hpp, stock_baselines.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "benches/scenarios/scenario_runs.hpp"
#include "distributed/embedded_server.hpp"
#include "benches/scenarios/stock.hpp"
#include "benches/scenarios/stock_baselines.hpp"
#include "postgres/embedded_postgres.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

namespace {


// The columns of one row of the stock table, lock or baseline.
std::vector<std::pair<std::string, double>> stock_counters(const stock::StockResult& r, bool uses_lock,
                                                           bool baseline, int gap_us) {
  // The first four are the ones to draw (locklab_plots.SCENARIO_BARS).
  return {{"final_stock", double(r.final_stock)},
          {"lost_updates", double(r.lost_updates())},
          {"items_per_second", r.tasks_per_second()},
          {"round_trips_per_task", r.round_trips_per_task},
          {"oversold", double(r.oversold())},
          {"task_p50_ms", r.task_p50_ms},
          {"task_p95_ms", r.task_p95_ms},
          {"retries", double(r.retries)},
          {"uses_lock", uses_lock ? 1.0 : 0.0},
          {"store_atomic", baseline ? 1.0 : 0.0},
          {"lock_timeouts", double(r.lock_timeouts)},
          {"decrements", double(r.decrements)},
          {"lock_lost", double(r.lock_lost)},
          {"errors", double(r.errors)},
          {"sold_out", double(r.sold_out)},
          {"not_run", double(r.not_run)},
          {"initial_stock", double(r.initial)},
          {"pool_threads", double(r.threads)},
          {"gap_us", double(gap_us)}};
}

}  // namespace

void run_stock_scenario(const Options& o) {
  stock::StockConfig c;
  c.gap = std::chrono::microseconds(o.gap_us);
  const int runs = o.runs > 0 ? o.runs : o.sized(1, 3, 1);
  redis::EmbeddedServer server;
  std::vector<stock::StockResult> results;
  std::vector<Entry> entries;
  int family = 0;
  auto record = [&](const stock::StockResult& r, int run, bool uses_lock, bool baseline) {
    results.push_back(r);
    Entry e;
    e.name = std::string("scenario_stock/") + r.lock;
    e.family = family;
    e.repetitions = runs;
    e.repetition_index = run;
    e.wall_ms = r.wall_ms;
    e.counters = stock_counters(r, uses_lock, baseline, o.gap_us);
    entries.push_back(e);
    std::cout << "." << std::flush;
  };
  for (const stock::StockRow& row : stock::stock_rows()) {
    for (int run = 0; run < runs; ++run) record(stock::run_stock(server.client_options(), row, c), run, bool(row.make), false);
    ++family;
  }
  // "Do you need a lock?": the same tasks as one atomic step at the store
  // (stock_baselines.hpp), on a PostgreSQL of the scenario's own (or
  // $LOCKLAB_PG_URL's) and the same redis-server.
  pg::ServerFromEnvOrEmbedded database;
  const stock::BaselineServers servers{server.client_options(), database.options()};
  for (const stock::BaselineRow& row : stock::baseline_rows()) {
    for (int run = 0; run < runs; ++run) record(stock::run_baseline(servers, row, c), run, false, true);
    ++family;
  }
  const int threads = results.empty() ? 0 : results.front().threads;
  std::cout << "\n\nstock: " << c.stock << " in Redis, " << c.tasks << " tasks on a pool of " << threads
            << " threads (2 x " << std::thread::hardware_concurrency() << " cores), each GET -> stock - 1 -> SET"
            << (o.gap_us > 0 ? ", pausing " + std::to_string(o.gap_us) + " us between GET and SET" : "") << "\n"
            << "locks: lease " << c.lease.count() << " ms, wait " << c.lock_timeout.count()
            << " ms; SpinLock(poll:50ms) retries every 50 ms; SpinLock(backoff) after 100, 150, 225 ... ms (cap 1 s, "
               "jitter 0.5)\n"
            << "no lock, one atomic step at the store: UPDATE(qty>0) and UPDATE(version)+retry on PostgreSQL ("
            << database.describe() << "), DECR(floor,Lua) on Redis\n"
            << "(stock test case study: the same sizes on a database row; without a lock the stock \"is "
               "inconsistent\" (no number given), with Lettuce's spin lock or Redisson's tryLock exactly 0)\n\n"
            << std::left << std::setw(22) << "lock" << std::right << std::setw(12) << "orig. final" << std::setw(8)
            << "final" << std::setw(8) << "sold" << std::setw(7) << "lost" << std::setw(10) << "oversold"
            << std::setw(10) << "wall ms" << std::setw(10) << "tasks/s" << std::setw(9) << "p50 ms" << std::setw(9)
            << "p95 ms" << std::setw(10) << "timeouts" << std::setw(11) << "lost lease" << std::setw(8) << "errors"
            << std::setw(9) << "retries" << std::setw(10) << "rt/task" << "\n";
  for (const stock::StockResult& r : results) {
    const char* original = r.lock == "none"                                           ? "wrong"
                       : (r.lock == "SpinLock(poll:50ms)" || r.lock == "PubSubLock") ? "0"
                                                                                   : "-";
    std::cout << std::left << std::setw(22) << r.lock << std::right << std::setw(12) << original << std::setw(8)
              << r.final_stock << std::setw(8) << r.decrements << std::setw(7) << r.lost_updates() << std::setw(10)
              << r.oversold() << std::setw(10) << cell(r.wall_ms) << std::setw(10) << cell(r.tasks_per_second())
              << std::setw(9) << cell(r.task_p50_ms, 2) << std::setw(9) << cell(r.task_p95_ms, 2) << std::setw(10)
              << r.lock_timeouts << std::setw(11) << r.lock_lost << std::setw(8) << r.errors << std::setw(9)
              << r.retries << std::setw(10) << cell(r.round_trips_per_task, 2) << "\n";
  }
  std::cout << "(sold: tasks that wrote stock - 1; lost = sold - (initial - final); oversold = lost + any stock below "
               "0; p50/p95: one task, lock wait included; the original PubSubLock row is Redisson's tryLock, its "
               "SpinLock row Lettuce's; tasks/s = acquisitions/s with a lock)\n";
  write_json(o.out + "/scenario_stock.json", "scenario_stock", o.mode, entries);
}

}  // namespace locklab::scenarios
