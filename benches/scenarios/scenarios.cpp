// scenarios — the experiments that break distributed locks on purpose, the
// ones that show what GuardedLock and a zero wait buy under load, and the
// case studies' other experiments (the stock test, the k6 lock table, MGET vs
// a GET loop; docs/case-studies.md). Each subcommand prints the case study's
// table (the original authors' figures) beside ours and writes
// <out>/scenario_<name>.json in the shared Google Benchmark shape
// (docs/architecture.md: one entry per table row, the columns as counters;
// repeated runs as repetitions of one row; a time series as extra entries
// with a `t:<seconds>` knob).
//
//   scenarios coupon [--processes] [--runs=N]     the coupon sale's table:
//       RedLock normal / clock drift / drift + fencing, 100 coupons, 40
//       clients (threads, or processes with --processes)
//   scenarios faults [--runs=N] [--only=drift,pause]  every fault with and without
//       fencing, N runs each (quick: 10 for drift and pause, the lab's
//       goal; 2 for the restarts)
//   coupon and faults take --resource=redis|postgres|both (default both):
//       where the coupons are kept, Redis or a PostgreSQL row whose
//       conditional UPDATE is the fence (coupon.hpp). PostgreSQL rows are
//       named <row>+pg (before +fence) and carry resource_postgres = 1;
//       faults runs drift, pause and restart against it (restart_delayed
//       is about the lock server alone). The server: LOCKLAB_PG_URL's, else
//       an EmbeddedPostgres.
//   scenarios partition [--runs=N] [--cut=iptables|link]   the holder cut
//       off from the lock servers by a real partition (network namespaces,
//       veth, iptables DROP or a link down), every lock at once, N runs
//       (quick 3, full 10, smoke 1); where the machine does not allow it
//       (not root, no `ip`, no iptables, `ip netns add` refused), one
//       "skipped" row with the reason as its label (partition.hpp)
//   scenarios herd [--processes=P] [--waiters=1,10,50] [--duration_ms=D]
//       the ticket-sale semaphore herd: N waiters in each of P processes
//       on one PermitSemaphore(1), raw (the case study's "before":
//       try_set_permits and try_acquire on every request) vs GuardedLock
//   scenarios stock [--runs=N] [--gap_us=U]       the stock test: 1,000 in
//       Redis, 1,000 read-compute-write tasks on 2 x cores threads, without
//       a lock and under each of our locks (stock.hpp)
//   scenarios vus_table [--vus=1,5,50] [--requests=N] [--think_us=U]  the
//       k6 lock table: V virtual users (threads) share N requests of
//       acquire, 1 ms hold, release, then U us untimed (default 1,000; 0
//       shows barging); avg / p50 / p95 per lock (vus_table.hpp)
//   scenarios batch [--runs=N] [--keys=K]   MGET vs a GET loop: K
//       keys (1,000) fetched by N x GET, MGET, a pipeline and MULTI/EXEC,
//       N fetches each (quick 20, full 100): latency, round trips, atomicity;
//       then a local 3-master Redis Cluster: CROSSSLOT vs {hash tags}, and
//       whether each of our locks keeps its keys in one slot (batch.hpp)
//   scenarios load_test [--time_scale=X] [--only=hold200-600ms,hold1-10s]
//       the ticket-sale load test (load_test.hpp): Poisson 50/min on one
//       key, 64 IO threads, holds 200-600 ms (2 min) and 1-10 s (10 min), raw
//       PermitSemaphore with a 60 s wait vs GuardedLock with 5 s; every
//       duration / X (quick: 40 for case 1, 100 for case 2; full: 10, 20);
//       the waiters over time as a series
//   scenarios pool_rejection [--time_scale=X]   the drained thread pool
//       (pool_rejection.hpp): a cache stampede on a core 2 / max 8 / queue 50 refresh executor,
//       PubSubLock try_lock_for(3 s) vs try_lock_for(0); every duration / X
//       (quick: 5, 10 s; full: 1, 30 s; durations in the case study's time)
//   scenarios token_sources [--waiters=1,50] [--duration_ms=D]  where a
//       fencing token comes from: INCR inside the acquire script, a separate
//       INCR, a PostgreSQL sequence, a PostgreSQL row's UPDATE ... RETURNING;
//       p50/p95 per token at 1 and 50 waiters for D ms each (quick 1,000,
//       full 3,000, smoke 150; token_sources.hpp)
//   scenarios failover [--runs=N] [--only=plain,wait1,wait1-one-behind,wait1-acker-lost,fenced,stop-only]
//       the primary dies before the lock's key replicated, Sentinel promotes
//       a replica, a second client takes the lock (failover.hpp): double
//       grants and phantom writes without WAIT, with wait_replicas = 1, and
//       with fencing; N runs a row (quick 5, full 10, smoke 1), 4-5 s each
//   scenarios all [--quick|--full|--smoke]        every subcommand, quick by default;
//       --smoke (./lab test): the least work that still writes every row and
//       column of every file, for checking the notebooks, not for reading:
//       coupon with 30 coupons and 12 clients (the faults' sizes), 1 run
//       of each fault, herd at 1 and 50 waiters for 300 ms, 50
//       vus_table requests, 5 fetches per batch method, load_test at time
//       scales 120 and 300, pool_rejection 4 s at 5, 1 partition run,
//       token_sources 150 ms a point; coupon and faults against both resources
// Common flags: --out=DIR (default $LOCKLAB_RESULTS_DIR or ./results).
// Bad flags: a message naming the flag and the usage, exit status 2, and
// nothing written.
//
// Time: the eight before partition, quick, took 71 s on the idle 2-core
// lab machine (the reference run): coupon 7 s, faults 22 s, herd 10 s,
// stock 1 s, vus_table 6 s, batch 2 s (a fresh cluster master waits 2 s
// before it calls itself writable, so the cluster starts first and settles
// during part A), load_test 19 s, pool_rejection 5 s; partition (root
// only) about 1.3 s a run, 5 s quick, 13 s full. --full uses 10 runs for every fault, 5 waiter
// counts for the herd, 3 runs of each stock row, 1,000 requests per
// vus_table cell, 100 fetches per batch method, 88 s for load_test and 60 s
// for pool_rejection (at the case study's own speed). --smoke took 27 s on
// a 2-core lab machine (load average about 1), before the PostgreSQL rows
// and token_sources, which add coupon 2.4 s, faults 5.5 s and
// token_sources 3.6 s to it (measured alone at load average 14, so an
// upper bound); quick adds token_sources ~9 s (8 points of 1 s) and the
// faults' and coupon's +pg rows (about as long as their Redis rows).
// failover comes on top: 4-5 s a run (a fresh replica set each), 5 runs of
// 6 rows quick (~2.5 min), 10 full (~5 min), 1 smoke (~30 s).
//
// This file is the command line only: it parses the flags (scenario_options.hpp)
// and calls the runners of scenario_runs.hpp, one .cpp per scenario beside its
// engine's header, built as the static library locklab::scenarios.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "benches/harness/point_process.hpp"
#include "benches/scenarios/coupon.hpp"
#include "benches/scenarios/partition.hpp"
#include "benches/scenarios/scenario_runs.hpp"

namespace locklab::scenarios {
namespace {

// ------------------------------------------------------------ options

[[noreturn]] void usage_error(const std::string& why) {
  std::cerr << "scenarios: " << why << "\n"
            << "usage: scenarios coupon|faults|partition|failover|herd|stock|vus_table|batch|load_test|pool_rejection|token_sources|all\n"
            << "                 [--quick|--full|--smoke] [--out=DIR] [--runs=N]\n"
            << "                 [--processes] (coupon) [--processes=P] [--waiters=1,10,50] [--duration_ms=D] (herd, "
               "token_sources)\n"
            << "                 [--gap_us=U] (stock) [--vus=1,5,50] [--requests=N] [--think_us=U] (vus_table)\n"
            << "                 [--keys=K] (batch; --runs=N: fetches per method)\n"
            << "                 [--time_scale=X] (load_test, pool_rejection: every case-study duration / X, "
               "1..10000)\n"
            << "                 [--only=hold200-600ms,hold1-10s] (load_test) [--only=drift,pause,...] (faults, failover)\n"
            << "                 [--cut=iptables|link] (partition)\n"
            << "                 [--resource=redis|postgres|both] (coupon, faults)\n";
  std::exit(2);
}

int positive(const std::string& flag, const std::string& text) {
  try {
    return bench::parse_positive(text, flag);
  } catch (const std::invalid_argument&) {
    usage_error(flag + " needs a positive integer, got '" + text + "'");
  }
}

Options parse(int argc, char** argv) {
  Options o;
  o.cut = partition::Cut::kIptablesDrop;
  o.resources = {Resource::kRedis, Resource::kPostgres};
  const char* env = std::getenv("LOCKLAB_RESULTS_DIR");
  o.out = env != nullptr && *env != '\0' ? env : "results";
  if (argc < 2) usage_error("no subcommand");
  o.command = argv[1];
  if (o.command != "coupon" && o.command != "faults" && o.command != "partition" && o.command != "failover" &&
      o.command != "herd" && o.command != "stock" && o.command != "vus_table" && o.command != "batch" &&
      o.command != "load_test" && o.command != "pool_rejection" && o.command != "token_sources" &&
      o.command != "all") {
    usage_error("unknown subcommand '" + o.command + "'");
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (a == "--quick") {
      o.mode = "quick";
    } else if (a == "--full") {
      o.mode = "full";
    } else if (a == "--smoke") {
      o.mode = "smoke";
    } else if (a == "--processes") {
      o.processes_flag = true;
    } else if (auto v = value("--processes")) {
      o.herd_processes = positive("--processes", *v);
      o.processes_flag = true;
    } else if (auto v = value("--out")) {
      if (v->empty()) usage_error("--out needs a directory");
      o.out = *v;
    } else if (auto v = value("--runs")) {
      o.runs = positive("--runs", *v);
    } else if (auto v = value("--time_scale")) {
      // A factor, not a count: 1 runs at the case study's own durations (minutes).
      double x = 0;
      std::size_t used = 0;
      try {
        x = std::stod(*v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != v->size() || !std::isfinite(x) || x < 1 || x > 10'000) {
        usage_error("--time_scale needs a number from 1 to 10000, got '" + *v + "'");
      }
      o.time_scale = x;
    } else if (auto v = value("--cut")) {
      const auto cut = partition::parse_cut(*v);
      if (!cut) usage_error("--cut needs iptables or link, got '" + *v + "'");
      o.cut = *cut;
    } else if (auto v = value("--resource")) {
      if (*v == "redis") {
        o.resources = {Resource::kRedis};
      } else if (*v == "postgres") {
        o.resources = {Resource::kPostgres};
      } else if (*v == "both") {
        o.resources = {Resource::kRedis, Resource::kPostgres};
      } else {
        usage_error("--resource needs redis, postgres or both, got '" + *v + "'");
      }
    } else if (auto v = value("--only")) {
      o.only = "," + *v + ",";
    } else if (auto v = value("--keys")) {
      o.keys = positive("--keys", *v);
      if (o.keys > 100'000) usage_error("--keys: at most 100000, got '" + *v + "'");
    } else if (auto v = value("--duration_ms")) {
      o.duration_ms = positive("--duration_ms", *v);
    } else if (auto v = value("--gap_us")) {
      o.gap_us = positive("--gap_us", *v);
    } else if (auto v = value("--think_us")) {
      o.think_us = *v == "0" ? 0 : positive("--think_us", *v);
    } else if (auto v = value("--requests")) {
      o.requests = positive("--requests", *v);
    } else if (auto v = value("--vus")) {
      std::stringstream in(*v);
      for (std::string item; std::getline(in, item, ',');) o.vus.push_back(positive("--vus", item));
      if (o.vus.empty()) usage_error("--vus needs a list like 1,5,50");
    } else if (auto v = value("--waiters")) {
      std::stringstream in(*v);
      for (std::string item; std::getline(in, item, ',');) o.waiters.push_back(positive("--waiters", item));
      if (o.waiters.empty()) usage_error("--waiters needs a list like 1,10,50");
    } else {
      usage_error("unknown flag '" + a + "'");
    }
  }
  return o;
}

}  // namespace
}  // namespace locklab::scenarios

int main(int argc, char** argv) {
  using namespace locklab::scenarios;
  try {
    if (argc >= 2 && std::string(argv[1]).rfind("--role=", 0) == 0) {
      const std::string role = std::string(argv[1]).substr(7);
      if (argc < 3 || std::string(argv[2]).rfind("--args=", 0) != 0) return 2;
      const Args a = decode(std::string(argv[2]).substr(7));
      if (role == "client") return client_main(a);
      if (role == "victim") return victim_main(a);
      if (role == "herd") return herd_main(a);
      return 2;
    }
    const Options o = parse(argc, argv);
    const auto start = Clock::now();
    if (o.command == "coupon" || o.command == "all") run_coupon_scenario(o);
    if (o.command == "faults" || o.command == "all") run_faults_scenario(o);
    if (o.command == "partition" || o.command == "all") run_partition_scenario(o);
    if (o.command == "herd" || o.command == "all") run_herd_scenario(o);
    if (o.command == "stock" || o.command == "all") run_stock_scenario(o);
    if (o.command == "vus_table" || o.command == "all") run_vus_scenario(o);
    if (o.command == "batch" || o.command == "all") run_batch_scenario(o);
    if (o.command == "load_test" || o.command == "all") run_load_test_scenario(o);
    if (o.command == "pool_rejection" || o.command == "all") run_pool_rejection_scenario(o);
    if (o.command == "token_sources" || o.command == "all") run_token_sources_scenario(o);
    if (o.command == "failover" || o.command == "all") run_failover_scenario(o);
    std::cout << "scenarios " << o.command << ": "
              << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() << " ms\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "scenarios: " << e.what() << "\n";
    return 1;
  }
}
