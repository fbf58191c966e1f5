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
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "benches/harness/point_process.hpp"
#include "benches/scenarios/batch.hpp"
#include "benches/scenarios/coupon.hpp"
#include "benches/scenarios/partition.hpp"
#include "benches/scenarios/failover.hpp"
#include "benches/scenarios/stock.hpp"
#include "benches/scenarios/stock_baselines.hpp"
#include "benches/scenarios/token_sources.hpp"
#include "postgres/embedded_postgres.hpp"
#include "benches/scenarios/vus_table.hpp"
#include "benches/scenarios/load_test.hpp"
#include "benches/scenarios/pool_rejection.hpp"
#include "distributed/guarded_lock.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/permit_semaphore.hpp"

extern char** environ;

namespace locklab::scenarios {
namespace {

// ------------------------------------------------------------ processes

pid_t spawn_role(const std::string& role, const Args& args) {
  std::vector<std::string> argv_s = {"scenarios", "--role=" + role, "--args=" + encode(args)};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

// ------------------------------------------------------------ JSON

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      o += ' ';
    } else {
      o += ch;
    }
  }
  return o;
}

std::string number(double v) {
  if (!std::isfinite(v)) return "0";
  std::ostringstream s;
  s << std::setprecision(10) << v;
  return s.str();
}

struct Entry {
  std::string name;
  int family = 0;
  int repetitions = 1;
  int repetition_index = 0;
  double wall_ms = 0;
  std::vector<std::pair<std::string, double>> counters;
  std::string label;  // Google Benchmark's free text ("" none): a skipped row's reason
};

// Google Benchmark's file shape (context + benchmarks), so the plotting
// module and compare.py read it like every suite's.
void write_json(const std::string& path, const std::string& suite, const std::string& mode,
                const std::vector<Entry>& entries) {
  utsname u{};
  uname(&u);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S+00:00", std::gmtime(&now));
  const char* rev = std::getenv("LOCKLAB_GIT_REVISION");
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  std::ostringstream j;
  j << "{\n  \"context\": {\n"
    << "    \"date\": \"" << date << "\",\n"
    << "    \"host_name\": \"" << json_escape(host) << "\",\n"
    << "    \"executable\": \"scenarios\",\n"
    << "    \"num_cpus\": " << std::thread::hardware_concurrency() << ",\n"
    << "    \"cores\": \"" << std::thread::hardware_concurrency() << "\",\n"
    << "    \"cpu_model\": \"" << json_escape(bench::first_line_with("/proc/cpuinfo", "model name")) << "\",\n"
    << "    \"kernel\": \"" << json_escape(std::string(u.sysname) + " " + u.release) << "\",\n"
#if defined(__GNUC__) && !defined(__clang__)
    << "    \"compiler\": \"g++ " << __VERSION__ << "\",\n"
#else
    << "    \"compiler\": \"" << json_escape(__VERSION__) << "\",\n"
#endif
    << "    \"git_revision\": \"" << json_escape(rev != nullptr && *rev != '\0' ? rev : "unknown") << "\",\n"
    << "    \"locklab_mode\": \"" << mode << "\",\n"
    << "    \"locklab_suite\": \"" << suite << "\"\n  },\n  \"benchmarks\": [\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    j << "    {\n      \"name\": \"" << json_escape(e.name) << "\",\n"
      << "      \"family_index\": " << e.family << ",\n      \"per_family_instance_index\": 0,\n"
      << "      \"run_name\": \"" << json_escape(e.name) << "\",\n      \"run_type\": \"iteration\",\n"
      << "      \"repetitions\": " << e.repetitions << ",\n      \"repetition_index\": " << e.repetition_index << ",\n"
      << "      \"threads\": 1,\n      \"iterations\": 1,\n"
      << "      \"real_time\": " << number(e.wall_ms) << ",\n      \"cpu_time\": " << number(e.wall_ms) << ",\n"
      << "      \"time_unit\": \"ms\"";
    if (!e.label.empty()) j << ",\n      \"label\": \"" << json_escape(e.label) << "\"";
    for (const auto& [k, v] : e.counters) j << ",\n      \"" << k << "\": " << number(v);
    j << "\n    }" << (i + 1 < entries.size() ? "," : "") << "\n";
  }
  j << "  ]\n}\n";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path);
  out << j.str();
  if (!out) throw std::runtime_error("cannot write " + path);
  std::cout << "wrote " << path << "\n";
}

// ------------------------------------------------------------ options

struct Options {
  std::string command;
  std::string mode = "quick";
  std::string out;
  bool processes_flag = false;  // coupon --processes
  int runs = 0;                 // 0: the mode's default
  int herd_processes = 2;
  std::vector<int> waiters;
  int duration_ms = 0;
  std::string only;  // faults --only=drift,pause: just these rows
  partition::Cut cut = partition::Cut::kIptablesDrop;  // partition --cut=iptables|link
  std::vector<Resource> resources = {Resource::kRedis, Resource::kPostgres};  // coupon, faults: --resource
  int gap_us = 0;         // stock: a pause between read and write (0: none)
  std::vector<int> vus;   // vus_table: 1,5,50 unless given
  int requests = 0;       // vus_table: 0: the mode's default
  int think_us = -1;      // vus_table: -1: VusConfig's default
  int keys = 0;      // batch --keys=K (0: 1,000)
  double time_scale = 0;  // load_test / pool_rejection: 0 = the mode's default

  // One knob's size in this mode. smoke (`./lab test`): the least work that
  // still writes every row and column of each file, so that every notebook
  // cell has data to run on; its figures are for checking, not for reading.
  template <class T>
  T sized(T quick, T full, T smoke) const {
    return mode == "full" ? full : mode == "smoke" ? smoke : quick;
  }
};

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

// ------------------------------------------------------------ coupon

std::string cell(double v, int precision = 0) {
  if (v < 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::vector<std::pair<std::string, double>> coupon_counters(const CouponResult& r) {
  return {{"issued_responses", static_cast<double>(r.tally.issued)},
          {"actual_issued", static_cast<double>(r.actual)},
          {"phantom_issues", static_cast<double>(r.phantom)},
          {"after_sold_out", static_cast<double>(r.tally.after_sold_out)},
          {"lock_timeouts", static_cast<double>(r.tally.lock_timeouts)},
          {"fence_rejections", static_cast<double>(r.tally.fence_rejections)},
          {"token_p95_ms", r.token_p95_ms},
          {"requests", static_cast<double>(r.tally.requests)},
          {"errors", static_cast<double>(r.tally.errors)},
          {"lock_lost", static_cast<double>(r.tally.lock_lost)},
          // What the drift victim's RedLock validity() said right before its
          // stale write (-1 in a row without the drift fault, where no victim writes).
          {"victim_validity_ms", r.victim_validity_ms},
          // The refusals the resource counted itself: the Redis hash's
          // `rejected` field, or PostgreSQL's `rejected` column (0 unfenced).
          {"resource_rejections", static_cast<double>(r.resource_rejections)},
          {"violation", r.violation() ? 1.0 : 0.0}};
}

// "+pg" for rows whose resource is PostgreSQL; written before "+fence", so
// that a row's unfenced twin is its name without "+fence".
std::string resource_tag(Resource r) { return r == Resource::kPostgres ? "+pg" : ""; }

void run_coupon_scenario(const Options& o) {
  const bool procs = o.processes_flag;
  World world(3);
  struct Row {
    std::string name;
    Fault fault;
    bool fenced;
  };
  // Smoke: the faults' sizes (the drift still strikes once, on the victim).
  const int coupons = o.sized(100, 100, 30), clients = o.sized(40, 40, 12);
  std::vector<Entry> entries;
  int family = 0;
  for (const Resource resource : o.resources) {
  const std::string tag = resource_tag(resource);
  const std::vector<Row> rows = {{"RedLock" + tag, Fault::kNone, false},
                                 {"RedLock+drift" + tag, Fault::kDrift, false},
                                 {"RedLock+drift" + tag + "+fence", Fault::kDrift, true}};
  std::vector<CouponResult> results;
  for (const Row& row : rows) {
    CouponConfig c = fault_config(row.fault, row.fenced, resource);
    c.coupons = coupons;
    c.clients = clients;
    c.processes = procs;
    const CouponResult r = run_coupon(world, c, spawn_role);
    results.push_back(r);
    Entry e;
    // Not a `/processes:` knob: the plotting module reads that knob as a
    // split against waiters, which a table row has not.
    e.name = "scenario_coupon/" + row.name + (procs ? "+processes" : "");
    e.family = family++;
    e.wall_ms = r.wall_ms;
    e.counters = coupon_counters(r);
    e.counters.emplace_back("client_processes", procs ? double(clients) : 0.0);
    e.counters.emplace_back("resource_postgres", resource == Resource::kPostgres ? 1.0 : 0.0);
    entries.push_back(e);
  }
  std::cout << "\ncoupon: " << coupons << " coupons, " << clients << " clients (" << (procs ? "processes" : "threads")
            << "), RedLock over 3 redis-servers, lease 1,000 ms, lock timeout 250 ms, skew 900 ms on 2 nodes; "
            << "the coupons in " << (resource == Resource::kPostgres ? "a PostgreSQL row" : "Redis") << "\n"
            << "(coupon sale case study: 40 VUs x 25 s, lock timeout 2,000 ms; its fence column is its Redis-INCR "
               "run)\n\n";
  const char* names[] = {"issued responses", "actually issued", "phantom issues", "after sold out",
                         "lock timeouts", "fence rejections", "token p95 (ms)", "requests"};
  const char* original[][3] = {{"100", "103", "100"}, {"100", "100", "100"}, {"0", "3", "0"},     {"41", "199", "-"},
                           {"440", "344", "348"}, {"-", "-", "45"},     {"-", "-", "0.81"}, {"581", "646", "-"}};
  std::cout << std::left << std::setw(18) << "" << std::right << std::setw(10) << "orig." << std::setw(10) << "orig."
            << std::setw(10) << "orig." << std::setw(10) << "ours" << std::setw(10) << "ours" << std::setw(10) << "ours"
            << "\n"
            << std::left << std::setw(18) << "" << std::right << std::setw(10) << "normal" << std::setw(10) << "drift"
            << std::setw(10) << "+fence" << std::setw(10) << "normal" << std::setw(10) << "drift" << std::setw(10)
            << "+fence" << "\n";
  for (int k = 0; k < 8; ++k) {
    std::cout << std::left << std::setw(18) << names[k] << std::right;
    for (int s = 0; s < 3; ++s) std::cout << std::setw(10) << original[k][s];
    for (const auto& r : results) {
      const double v[] = {double(r.tally.issued),        double(r.actual),
                          double(r.phantom),             double(r.tally.after_sold_out),
                          double(r.tally.lock_timeouts), double(r.tally.fence_rejections),
                          r.token_p95_ms,                double(r.tally.requests)};
      std::cout << std::setw(10) << cell(v[k], k == 6 ? 2 : 0);
    }
    std::cout << "\n";
  }
  std::cout << "(ours, drift: the victim's validity() said " << cell(results[1].victim_validity_ms)
            << " ms left when it wrote; its write was " << results[1].victim << "; fenced: " << results[2].victim
            << "; refusals the " << resource_label(resource) << " resource counted itself: "
            << results[2].resource_rejections << ")\n";
  }
  write_json(o.out + "/scenario_coupon.json", "scenario_coupon", o.mode, entries);
}

// ------------------------------------------------------------ faults

void run_faults_scenario(const Options& o) {
  struct Row {
    Fault fault;
    int runs;
  };
  const int goal_runs = o.runs > 0 ? o.runs : o.sized(10, 10, 1);
  const int other_runs = o.runs > 0 ? o.runs : o.sized(2, 10, 1);
  struct ResourceRow {
    Fault fault;
    int runs;
    Resource resource;
  };
  std::vector<ResourceRow> rows;
  for (const Resource resource : o.resources) {
    rows.push_back({Fault::kDrift, goal_runs, resource});
    rows.push_back({Fault::kPause, goal_runs, resource});
    rows.push_back({Fault::kRestart, other_runs, resource});
    // The delayed restart is about the lock server alone: where the
    // coupons are kept changes nothing in it.
    if (resource == Resource::kRedis) rows.push_back({Fault::kRestartDelayed, other_runs, resource});
  }
  World red(3);
  World single(1);
  std::vector<Entry> entries;
  struct Line {
    std::string name;
    int runs = 0, violations = 0;
    std::vector<double> phantom, rejections, resource_rejections, lost, errors, issued;
    std::map<std::string, int> victim;
  };
  std::vector<Line> lines;
  int family = 0;
  for (const ResourceRow& row : rows) {
    if (!o.only.empty() && o.only.find("," + std::string(fault_name(row.fault)) + ",") == std::string::npos) continue;
    for (bool fenced : {false, true}) {
      CouponConfig c = fault_config(row.fault, fenced, row.resource);
      // Small enough for 10 runs a row, big enough for contention.
      c.coupons = 30;
      c.clients = 12;
      Line line;
      line.name = std::string(fault_name(row.fault)) + resource_tag(row.resource) + (fenced ? "+fence" : "");
      for (int run = 0; run < row.runs; ++run) {
        const CouponResult r = run_coupon(c.red_lock ? red : single, c, spawn_role);
        ++line.runs;
        line.violations += r.violation() ? 1 : 0;
        line.phantom.push_back(double(r.phantom));
        line.rejections.push_back(double(r.tally.fence_rejections));
        line.resource_rejections.push_back(double(r.resource_rejections));
        line.lost.push_back(double(r.tally.lock_lost));
        line.errors.push_back(double(r.tally.errors));
        line.issued.push_back(double(r.actual));
        ++line.victim[r.victim];
        Entry e;
        e.name = "scenario_faults/" + line.name;
        e.family = family;
        e.repetitions = row.runs;
        e.repetition_index = run;
        e.wall_ms = r.wall_ms;
        e.counters = coupon_counters(r);
        e.counters.emplace_back("resource_postgres", row.resource == Resource::kPostgres ? 1.0 : 0.0);
        entries.push_back(e);
      }
      ++family;
      lines.push_back(line);
      std::cout << "." << std::flush;
    }
  }
  auto range = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::ostringstream s;
    s << v.front();
    if (v.back() != v.front()) s << ".." << v.back();
    return s.str();
  };
  std::cout << "\n\nfaults: 30 coupons, 12 clients, one victim holding the lock when the fault strikes\n"
            << "(coupon sale case study, drift: 3 phantom issues in its one run, 0 with a fencing token, 45 writes "
               "blocked)\n"
            << "(+pg: the coupons in a PostgreSQL row; db rej.: the refusals the resource counted itself, the "
               "Redis hash or the PostgreSQL row)\n\n"
            << std::left << std::setw(22) << "fault" << std::right << std::setw(6) << "runs" << std::setw(12)
            << "violations" << std::setw(10) << "phantom" << std::setw(12) << "fence rej." << std::setw(10) << "db rej." << std::setw(8) << "issued"
            << std::setw(11) << "lock lost" << std::setw(12) << "errors" << "   victim's stale write\n";
  for (const Line& l : lines) {
    std::string victim;
    for (const auto& [word, n] : l.victim) victim += (victim.empty() ? "" : ", ") + word + " x" + std::to_string(n);
    std::cout << std::left << std::setw(22) << l.name << std::right << std::setw(6) << l.runs << std::setw(12)
              << (std::to_string(l.violations) + "/" + std::to_string(l.runs)) << std::setw(10) << range(l.phantom)
              << std::setw(12) << range(l.rejections) << std::setw(10) << range(l.resource_rejections) << std::setw(8)
              << range(l.issued) << std::setw(11)
              << range(l.lost) << std::setw(12) << range(l.errors) << "   " << victim << "\n";
  }
  std::cout << "\n(the network partition has its own subcommand: scenarios partition)\n";
  write_json(o.out + "/scenario_faults.json", "scenario_faults", o.mode, entries);
}

// ------------------------------------------------------------ partition

void run_partition_scenario(const Options& o) {
  partition::PartitionConfig c;
  c.cut = o.cut;
  c.runs = o.runs > 0 ? o.runs : o.sized(3, 10, 1);
  const std::string path = o.out + "/scenario_partition.json";
  const std::string why = partition::partition_unavailable(c.cut);
  if (!why.empty()) {
    // One row that says so: the file is still written (a stale result of
    // another machine must not stand in for this one), the exit status 0.
    std::cout << "\npartition: skipped: " << why << "\n";
    Entry e;
    e.name = "scenario_partition/skipped";
    e.counters = {{"partition_skipped", 1.0}};
    e.label = "skipped: " + why;
    write_json(path, "scenario_partition", o.mode, {e});
    return;
  }
  const std::vector<partition::RunOutcome> runs = partition::run_partition(c);
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < runs.front().locks.size(); ++i) {
    for (std::size_t r = 0; r < runs.size(); ++r) {
      Entry e;
      e.name = "scenario_partition/" + runs[r].locks[i].lock;
      e.family = static_cast<int>(i);
      e.repetitions = static_cast<int>(runs.size());
      e.repetition_index = static_cast<int>(r);
      e.wall_ms = runs[r].wall_ms;
      e.counters = partition::counters(runs[r].locks[i], runs[r], c);
      entries.push_back(e);
    }
  }
  partition::print_table(std::cout, runs, c);
  write_json(path, "scenario_partition", o.mode, entries);
}

// ------------------------------------------------------------ herd

struct HerdTally {
  std::int64_t acquisitions = 0, fast_fails = 0, timeouts = 0, errors = 0, max_waiting = 0, max_at_redis = 0;
};

void raise_max(std::atomic<std::int64_t>& m, std::int64_t v) {
  std::int64_t seen = m.load();
  while (v > seen && !m.compare_exchange_weak(seen, v)) {
  }
}

// Child role "herd": N threads on one key for duration_ms from start_at
// (CLOCK_REALTIME ms, shared by all processes).
int herd_main(const Args& a) {
  const bool guarded_mode = arg_int(a, "guarded") != 0;
  const int n = static_cast<int>(arg_int(a, "waiters"));
  const auto start_at = std::chrono::system_clock::time_point(ms(arg_int(a, "start_at")));
  const ms duration(arg_int(a, "duration_ms"));
  const std::string key = a.at("key");
  redis::Client::Options co;
  co.port = static_cast<int>(arg_int(a, "port"));
  co.command_timeout = 10s;
  co.max_connections = 256;
  redis::Client client(co);
  redis::PermitSemaphore raw(client, key);
  redis::GuardTraits<redis::PermitSemaphore> traits;
  traits.permits = 1;
  traits.lease = 10s;
  redis::GuardedLock<redis::PermitSemaphore> guarded(
      [&client](const std::string& k) { return std::make_unique<redis::PermitSemaphore>(client, k); },
      {.max_waiters = arg_int(a, "max_waiters")}, traits);
  std::atomic<std::int64_t> inside{0}, max_inside{0}, acq{0}, fast{0}, timeouts{0}, errors{0};
  std::this_thread::sleep_until(start_at);
  const auto until = Clock::now() + duration;
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&] {
      while (Clock::now() < until) {
        try {
          const std::int64_t now_inside = inside.fetch_add(1) + 1;
          if (!guarded_mode) raise_max(max_inside, now_inside);
          if (guarded_mode) {
            auto g = guarded.try_acquire(key, 2s);
            inside.fetch_sub(1);
            if (g) {
              std::this_thread::sleep_for(1ms);  // the critical section
              g.release();
              acq.fetch_add(1);
            } else if (g.outcome() == redis::GuardedLock<redis::PermitSemaphore>::Outcome::kFastFail) {
              fast.fetch_add(1);
            } else {
              timeouts.fetch_add(1);
            }
          } else {
            (void)raw.try_set_permits(1);  // the case study's "before": on every request
            auto id = raw.try_acquire(2s, 10s);
            inside.fetch_sub(1);
            if (id) {
              std::this_thread::sleep_for(1ms);
              raw.release(*id);
              acq.fetch_add(1);
            } else {
              timeouts.fetch_add(1);
            }
          }
        } catch (const std::exception&) {
          errors.fetch_add(1);
        }
        std::this_thread::sleep_for(1ms);  // think
      }
    });
  }
  // Guarded: the waiters are the gate's tickets (threads that fail fast are
  // not waiting), sampled; raw: every thread inside try_acquire.
  std::atomic<bool> done{false};
  std::thread sampler;
  if (guarded_mode) {
    max_inside.store(0);
    sampler = std::thread([&] {
      while (!done.load()) {
        raise_max(max_inside, guarded.waiting(key));
        std::this_thread::sleep_for(200us);
      }
    });
  }
  for (auto& t : ts) t.join();
  done.store(true);
  if (sampler.joinable()) sampler.join();
  const auto c = guarded.counters();
  std::ostringstream line;
  line << acq.load() << ' ' << fast.load() << ' ' << timeouts.load() << ' ' << errors.load() << ' ' << max_inside.load()
       << ' ' << (guarded_mode ? c.max_redis_waiters : max_inside.load());
  write_file(a.at("out"), line.str());
  return 0;
}

// server_counters(): benches/scenarios/load_test.hpp (shared with load_test
// and pool_rejection).

void run_herd_scenario(const Options& o) {
  const int procs = o.herd_processes;
  const std::vector<int> waiters =
      !o.waiters.empty() ? o.waiters
                         : o.sized(std::vector<int>{1, 10, 50}, std::vector<int>{1, 5, 10, 20, 50}, std::vector<int>{1, 50});
  const ms duration(o.duration_ms > 0 ? o.duration_ms : o.sized(1'000, 3'000, 300));
  const int max_waiters = 32;
  redis::EmbeddedServer server;
  redis::Client probe(server.client_options());
  char tmpl[] = "/tmp/locklab-herd-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string dir = tmpl;
  std::vector<Entry> entries;
  struct Line {
    std::string impl;
    int waiters;
    HerdTally t;
    double cmds, scripts, cpu_us, rate;
  };
  std::vector<Line> lines;
  int family = 0;
  for (bool guarded : {false, true}) {
    for (int n : waiters) {
      probe.command({"FLUSHALL"});
      const auto start_at = std::chrono::system_clock::now() + 600ms;
      const auto start_ms = std::chrono::duration_cast<ms>(start_at.time_since_epoch()).count();
      std::vector<pid_t> kids;
      for (int p = 0; p < procs; ++p) {
        Args a{{"guarded", guarded ? "1" : "0"},
               {"waiters", std::to_string(n)},
               {"start_at", std::to_string(start_ms)},
               {"duration_ms", std::to_string(duration.count())},
               {"key", "locklab:herd"},
               {"port", std::to_string(server.port())},
               {"max_waiters", std::to_string(max_waiters)},
               {"out", dir + "/herd" + std::to_string(p)}};
        kids.push_back(spawn_role("herd", a));
        if (kids.back() <= 0) throw std::runtime_error("cannot start a herd process");
      }
      std::this_thread::sleep_until(start_at - 20ms);
      const auto before = server_counters(probe);
      const auto t0 = Clock::now();
      HerdTally total;
      for (int p = 0; p < procs; ++p) {
        const int rc = detail::wait_exit(kids[static_cast<std::size_t>(p)], duration + 30s);
        if (rc != 0) throw std::runtime_error("herd process failed (status " + std::to_string(rc) + ")");
        std::istringstream in(read_file(dir + "/herd" + std::to_string(p)));
        HerdTally t;
        in >> t.acquisitions >> t.fast_fails >> t.timeouts >> t.errors >> t.max_waiting >> t.max_at_redis;
        total.acquisitions += t.acquisitions;
        total.fast_fails += t.fast_fails;
        total.timeouts += t.timeouts;
        total.errors += t.errors;
        total.max_waiting = std::max(total.max_waiting, t.max_waiting);
        total.max_at_redis = std::max(total.max_at_redis, t.max_at_redis);
      }
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      const auto after = server_counters(probe);
      const double acq = std::max<double>(1, double(total.acquisitions));
      Line l{guarded ? "GuardedLock" : "Raw",          n,
             total,                                   (after.calls - before.calls) / acq,
             (after.scripts - before.scripts) / acq,  (after.cpu - before.cpu) * 1e6 / acq,
             double(total.acquisitions) / wall};
      lines.push_back(l);
      Entry e;
      // The process count is a counter, not a name knob: the plotting
      // module reads a `processes` knob as a threads-vs-processes split,
      // and this suite's story is the curve against waiters.
      e.name = "scenario_herd/" + l.impl + "/waiters:" + std::to_string(n);
      e.family = family++;
      e.wall_ms = wall * 1e3;
      e.counters = {{"items_per_second", l.rate},
                    {"client_processes", double(procs)},
                    {"redis_cmds_per_acquire", l.cmds},
                    {"scripts_per_acquire", l.scripts},
                    {"server_cpu_us_per_acquire", l.cpu_us},
                    {"max_waiters", double(total.max_waiting)},
                    {"max_redis_waiters", double(total.max_at_redis)},
                    {"fast_fails", double(total.fast_fails)},
                    {"timeouts", double(total.timeouts)},
                    {"errors", double(total.errors)},
                    {"acquisitions", double(total.acquisitions)}};
      entries.push_back(e);
      std::cout << "." << std::flush;
    }
  }
  (void)std::system(("rm -rf '" + dir + "'").c_str());
  std::cout << "\n\nherd: PermitSemaphore(1), " << procs << " processes x N waiters, hold 1 ms, think 1 ms, wait 2 s, "
            << duration.count() << " ms a point; GuardedLock max_waiters " << max_waiters << "\n"
            << "(ticket-sale case study at 50 req/min: max concurrent waiters 64+ -> 1, success 23% -> 100%, "
               "Redis errors yes -> 0)\n\n"
            << std::left << std::setw(12) << "impl" << std::right << std::setw(8) << "N/proc" << std::setw(10) << "acq/s"
            << std::setw(11) << "cmds/acq" << std::setw(14) << "scripts/acq" << std::setw(13) << "cpu us/acq" << std::setw(12) << "max waiting"
            << std::setw(11) << "at Redis" << std::setw(11) << "fast-fails" << std::setw(10) << "timeouts" << "\n";
  for (const Line& l : lines) {
    std::cout << std::left << std::setw(12) << l.impl << std::right << std::setw(8) << l.waiters << std::setw(10)
              << cell(l.rate) << std::setw(11) << cell(l.cmds, 2) << std::setw(14) << cell(l.scripts, 2) << std::setw(13) << cell(l.cpu_us, 1) << std::setw(12)
              << l.t.max_waiting << std::setw(11) << l.t.max_at_redis << std::setw(11) << l.t.fast_fails << std::setw(10)
              << l.t.timeouts << "\n";
  }
  write_json(o.out + "/scenario_herd.json", "scenario_herd", o.mode, entries);
}

// ------------------------------------------------------------ stock

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

// ------------------------------------------------------------ vus_table

void run_vus_scenario(const Options& o) {
  const std::vector<int> vus_list = !o.vus.empty() ? o.vus : std::vector<int>{1, 5, 50};
  const int requests = o.requests > 0 ? o.requests : o.sized(100, 1'000, 50);
  const long think_us = o.think_us >= 0 ? o.think_us : long(vus::VusConfig{}.think.count());
  redis::EmbeddedServer server;
  std::vector<vus::VusResult> results;
  std::vector<Entry> entries;
  int family = 0;
  for (int n : vus_list) {
    for (const vus::VuLock& lock : vus::vu_locks()) {
      vus::VusConfig c;
      c.vus = n;
      c.requests = requests;
      if (o.think_us >= 0) c.think = std::chrono::microseconds(o.think_us);
      const vus::VusResult r = vus::run_vus(server.client_options(), lock, c);
      results.push_back(r);
      Entry e;
      e.name = std::string("scenario_vus_table/") + r.lock + "/waiters:" + std::to_string(n);
      e.family = family++;
      e.wall_ms = r.wall_ms;
      e.counters = {{"items_per_second", r.acquisitions_per_second()},
                    {"avg_ms", r.avg_ms},
                    {"p50_ms", r.p50_ms},
                    {"p95_ms", r.p95_ms},
                    {"p99_ms", r.p99_ms},
                    {"max_ms", r.max_ms},
                    {"round_trips_per_request", r.round_trips_per_request},
                    // Every counter becomes a panel of the suite's figure:
                    // the ones that are constant by design (requests, hold)
                    // stay in the printout.
                    {"lock_timeouts", double(r.lock_timeouts)},
                    {"lock_lost", double(r.lock_lost)},
                    {"errors", double(r.errors)}};
      entries.push_back(e);
      std::cout << "." << std::flush;
    }
  }
  // The k6 lock table (docs/case-studies.md#the-k6-lock-table; k6, 100 requests; avg / p50 / p95 in ms), the
  // original authors' figures. FairLock was not in it.
  struct OriginalRow {
    int vus;
    const char* lock;
    const char* avg;
    const char* p50;
    const char* p95;
  };
  const OriginalRow original[] = {{1, "SpinLock(poll-100ms)", "1.49", "1.16", "3.34"},  {1, "PubSubLock", "1.82", "1.31", "2.51"},
                       {1, "AdaptiveLock", "4.16", "2.68", "3.62"},          {5, "SpinLock(poll-100ms)", "11.85", "1.27", "103.67"},
                       {5, "PubSubLock", "4.32", "3.88", "6.97"},            {5, "AdaptiveLock", "4.76", "1.93", "5.51"},
                       {50, "SpinLock(poll-100ms)", "600.23", "4.32", "2,610"}, {50, "PubSubLock", "33.31", "36.05", "50.28"},
                       {50, "AdaptiveLock", "94.37", "86.04", "211.17"}};
  std::cout << "\n\nvus_table: " << requests
            << " requests per cell shared by V virtual users (threads of one process, one Client), each: acquire, "
               "hold 1 ms, release, then "
            << think_us << " us untimed before the next; wait <= 10 s\n"
            << "SpinLock(poll-100ms) = Lettuce polling (lease 3 s, sleep 100 ms); PubSubLock = Redisson tryLock "
               "(watchdog); AdaptiveLock = the case study's (5 ms spin budget, lease 3 s); FairLock (ours) lease 3 s\n"
            << "(k6 lock table case study: 100 requests to a Spring endpoint: HTTP + a DB transaction inside the "
               "lock; ms)\n\n"
            << std::left << std::setw(5) << "VUs" << std::setw(22) << "lock" << std::right << std::setw(10) << "orig. avg"
            << std::setw(10) << "orig. p50" << std::setw(10) << "orig. p95" << "  |" << std::setw(9) << "avg" << std::setw(9)
            << "p50" << std::setw(9) << "p95" << std::setw(9) << "max" << std::setw(8) << "acq/s" << std::setw(10)
            << "timeouts" << std::setw(8) << "rt/req" << "\n";
  for (const vus::VusResult& r : results) {
    const OriginalRow* s = nullptr;
    for (const OriginalRow& k : original) {
      if (k.vus == r.vus && r.lock == k.lock) s = &k;
    }
    std::cout << std::left << std::setw(5) << r.vus << std::setw(22) << r.lock << std::right << std::setw(10)
              << (s ? s->avg : "-") << std::setw(10) << (s ? s->p50 : "-") << std::setw(10) << (s ? s->p95 : "-")
              << "  |" << std::setw(9) << cell(r.avg_ms, 2) << std::setw(9) << cell(r.p50_ms, 2) << std::setw(9)
              << cell(r.p95_ms, 2) << std::setw(9) << cell(r.max_ms, 1) << std::setw(8) << cell(r.acquisitions_per_second())
              << std::setw(10) << r.lock_timeouts << std::setw(8) << cell(r.round_trips_per_request, 1) << "\n";
  }
  std::cout << "(ours: the whole request, acquire + hold + release; acq/s over the cell's wall time, think included; "
               "rt/req: Redis round trips per request, pub/sub connection not counted)\n";
  write_json(o.out + "/scenario_vus_table.json", "scenario_vus_table", o.mode, entries);
}

// ------------------------------------------------------------ batch

std::string slot_list(const batch::SlotCheck& c) {
  // Keys shown relative to the lock name, tokens elided: they are long and
  // only their slot matters here.
  std::string out;
  for (std::size_t i = 0; i < c.set.keys.size(); ++i) {
    std::string k = c.set.keys[i];
    const std::string prefix = redis::derived_key_prefix(c.set.name);
    if (k == c.set.name) k = "<name>";
    if (k.rfind(prefix, 0) == 0) k = "~" + k.substr(prefix.size());
    for (const char* part : {"~alive:", "~wake:"}) {
      if (k.rfind(part, 0) == 0) k = std::string(part) + "<t>";
    }
    out += (out.empty() ? "" : " ") + k + "=" + std::to_string(c.slots[i]);
  }
  return out;
}

void run_batch_scenario(const Options& o) {
  batch::Config cfg;
  cfg.keys = o.keys > 0 ? o.keys : 1'000;
  cfg.fetches = o.runs > 0 ? o.runs : o.sized(20, 100, 5);
  cfg.torn_fetches = o.sized(5, 20, 2);
  redis::EmbeddedServer server;
  redis::Client client(server.client_options());
  // Part B's cluster is started first and left to settle while part A
  // runs (a fresh master waits 2 s before it calls itself writable). If
  // it cannot start, part B is skipped, not failed; the JSON's cluster row
  // says which.
  std::unique_ptr<batch::LocalCluster> cluster;
  std::string why_not;
  try {
    cluster = std::make_unique<batch::LocalCluster>(3, 10s, false);
  } catch (const std::exception& e) {
    why_not = e.what();
  }
  const batch::Result r = batch::run(client, cfg);
  std::vector<Entry> entries;
  int family = 0;
  const double loopback_ms = r.rtt_p50_us / 1e3;
  std::cout << "\nbatch: " << r.keys << " keys (" << r.value_bytes << "-byte values) fetched " << cfg.fetches
            << " times by each method, interleaved; loopback RTT p50 " << cell(r.rtt_p50_us) << " us (PING)\n"
            << "(MGET vs a GET loop case study, over a network: N x GET 1.7-4.0 s; MGET / pipeline / batch "
               "16-32 ms)\n\n"
            << std::left << std::setw(12) << "method" << std::right << std::setw(13) << "round trips" << std::setw(8)
            << "atomic" << std::setw(10) << "p50 ms" << std::setw(10) << "p95 ms" << std::setw(13) << "server cmds"
            << std::setw(15) << "server cpu us" << std::setw(18) << "model@1ms RTT ms" << std::setw(8) << "values"
            << std::setw(8) << "mixed" << "\n";
  for (const auto& m : r.methods) {
    const double model = m.modelled_ms(1.0, loopback_ms);
    std::cout << std::left << std::setw(12) << batch::method_label(m.method) << std::right << std::setw(13)
              << cell(m.round_trips_per_fetch) << std::setw(8) << (m.atomic ? "yes" : "no") << std::setw(10)
              << cell(m.p50_ms, 2) << std::setw(10) << cell(m.p95_ms, 2) << std::setw(13)
              << cell(m.server_cmds_per_fetch) << std::setw(15) << cell(m.server_cpu_us_per_fetch) << std::setw(18)
              << cell(model, 1) << std::setw(8) << (m.values_ok ? "ok" : "WRONG") << std::setw(8)
              << (std::to_string(m.mixed_fetches) + "/" + std::to_string(m.torn_fetches)) << "\n";
    Entry e;
    e.name = std::string("scenario_batch/") + batch::method_id(m.method);
    e.family = family++;
    e.wall_ms = m.p50_ms;
    e.counters = {{"p50_ms", m.p50_ms},
                  {"round_trips_per_fetch", m.round_trips_per_fetch},
                  {"modelled_ms_at_1ms_rtt", model},
                  {"atomic", m.atomic ? 1.0 : 0.0},
                  {"p95_ms", m.p95_ms},
                  {"min_ms", m.min_ms},
                  {"max_ms", m.max_ms},
                  {"server_cmds_per_fetch", m.server_cmds_per_fetch},
                  {"server_cpu_us_per_fetch", m.server_cpu_us_per_fetch},
                  {"loopback_rtt_us", r.rtt_p50_us},
                  {"keys", double(r.keys)},
                  {"fetches", double(m.fetches)},
                  {"values_ok", m.values_ok ? 1.0 : 0.0},
                  {"mixed_fetches", double(m.mixed_fetches)},
                  {"fetches_under_writes", double(m.torn_fetches)}};
    entries.push_back(e);
  }
  const auto& each = r.of(batch::Method::kGetEach);
  const auto& mget = r.of(batch::Method::kMget);
  std::cout << "mixed: fetches (of those made while another client rewrote every key with one MSET per round) "
               "that returned values of two rounds; 0 for a non-atomic method means not caught this time\n"
               "(a 1,000-GET pipeline is mostly read and run by the server in one go: cut rarely, but cut)\n";
  std::cout << "N x GET / MGET at p50: " << cell(each.p50_ms / mget.p50_ms, 1) << "x here; model at 1 ms RTT: "
            << cell(each.modelled_ms(1.0, loopback_ms) / mget.modelled_ms(1.0, loopback_ms), 0)
            << "x (time ~= round trips x RTT + client and server work; the case study's 1.7-4.0 s for 1,000 GETs is an "
               "RTT of 1.7-4 ms)\n";

  if (cluster) {
    try {
      cluster->wait_until_ok(10s);
    } catch (const std::exception& e) {
      why_not = e.what();
      cluster.reset();
    }
  }
  Entry ce;
  ce.name = "scenario_batch/cluster";
  ce.family = family++;
  const std::vector<std::string> names = {"orders:42", "{orders:42}"};
  std::vector<batch::SlotCheck> checks;
  if (cluster) {
    const batch::ClusterDemo d = batch::cluster_demo(*cluster, batch::key_names(cfg));
    std::cout << "\ncluster: 3 masters on 127.0.0.1 (ports " << cluster->port(0) << ", " << cluster->port(1) << ", "
              << cluster->port(2) << "; slots 0-5460 / 5461-10922 / 10923-16383), cluster_state:ok "
              << cell(cluster->ready_ms()) << " ms after its start (started before part A)\n";
    auto slots = [](const std::vector<int>& v) {
      std::string s;
      for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
      return s;
    };
    std::string keys;
    for (const auto& k : d.untagged) keys += " " + k;
    std::cout << "  MGET" << keys << "  (slots " << slots(d.untagged_slots) << ")\n    -> " << d.untagged_reply << "\n";
    keys.clear();
    for (const auto& k : d.tagged) keys += " " + k;
    std::cout << "  MGET" << keys << "  (slots " << slots(d.tagged_slots) << ", node " << d.tagged_node << ")\n    -> "
              << (d.tagged_ok ? "ok: " : "FAILED: ") << d.tagged_reply << "\n"
              << "  pipeline of " << d.pipeline_keys << " GETs (part A's keys) sent to node 0: " << d.pipeline_answered
              << " answered, " << d.pipeline_moved
              << " MOVED (a cluster-aware client groups a batch by node and merges the replies)\n"
              << "  slot = CRC16(key or its {tag}) mod 16384: key_slot() here vs CLUSTER KEYSLOT on " << d.crc_checked
              << " keys: " << d.crc_mismatches << " mismatches\n";
    ce.wall_ms = cluster->ready_ms();
    ce.counters = {{"cluster_started", 1},
                   {"crossslot_untagged", d.untagged_crossslot ? 1.0 : 0.0},
                   {"tagged_mget_ok", d.tagged_ok ? 1.0 : 0.0},
                   {"pipeline_moved", double(d.pipeline_moved)},
                   {"pipeline_answered", double(d.pipeline_answered)},
                   {"crc16_checked", double(d.crc_checked)},
                   {"crc16_mismatches", double(d.crc_mismatches)},
                   {"cluster_ready_ms", cluster->ready_ms()}};
    redis::Client binder(cluster->client_options(0));
    checks = batch::check_lock_keys(cluster.get(), binder, names);
  } else {
    std::cout << "\ncluster: skipped, a local Redis Cluster did not start here: " << why_not
              << "\n(the lock-key slots below come from this program's CRC16, not from a cluster)\n";
    ce.counters = {{"cluster_started", 0}};
    checks = batch::check_lock_keys(nullptr, client, names);
  }
  entries.push_back(ce);

  std::cout << "\nour locks' keys for one lock name, as slots (keys one script or command touches together; "
               "<t> = a waiter's token):\n"
            << std::left << std::setw(22) << "lock" << std::setw(13) << "name" << std::right << std::setw(6) << "slots"
            << std::setw(6) << "one?" << "  " << std::left << std::setw(62) << "keys=slot"
            << (cluster ? "acquire+release on the cluster" : "") << "\n";
  std::vector<std::string> split;
  for (const auto& c : checks) {
    std::cout << std::left << std::setw(22) << c.set.lock << std::setw(13) << c.set.name << std::right << std::setw(6)
              << c.distinct_slots << std::setw(6) << (c.same_slot ? "yes" : "NO") << "  " << std::left << std::setw(61)
              << slot_list(c) << " " << (c.live < 0 && !cluster ? "" : c.live_detail) << "\n";
    if (!c.same_slot) split.push_back(c.set.lock);
    Entry e;
    e.name = "scenario_batch/" + c.set.lock + "[" + c.set.name + "]";
    e.family = family++;
    e.counters = {{"distinct_slots", double(c.distinct_slots)},
                  {"same_slot", c.same_slot ? 1.0 : 0.0},
                  {"keys", double(c.set.keys.size())},
                  {"live_ok", double(c.live)},
                  {"slots_from_server", c.from_server ? 1.0 : 0.0}};
    entries.push_back(e);
  }
  std::cout << "(channels: <name>~channel, derived like the keys; classic PUBLISH/SUBSCRIBE is broadcast to every node, so its slot does "
               "not matter)\n";
  if (!split.empty()) {
    std::string list;
    for (const auto& l : split) list += (list.empty() ? "" : ", ") + l;
    std::cout << "finding: with an untagged name these spread their keys over several slots, so their scripts "
                 "get CROSSSLOT on a Redis Cluster: "
              << list << "; a {hash tag} name (e.g. {orders:42}) puts every key of a lock in one slot\n";
  }
  write_json(o.out + "/scenario_batch.json", "scenario_batch", o.mode, entries);
}

// ------------------------------------------------------------ load_test

std::string percent(double v) { return cell(100.0 * v, 0) + "%"; }

void run_load_test_scenario(const Options& o) {
  // Default time scales, per case, so that each run takes a few seconds
  // and a scaled hold stays well above a Redis round trip plus a wake-up on
  // a busy 2-core machine (1 ms real = time_scale ms of the case study's time): case 1
  // (2 min, holds 200-600 ms) at 40 -> 3 s, holds 5-15 ms; case 2 (10 min,
  // holds 1-10 s) at 100 -> 6 s, holds 10-100 ms. Full: 10 and 20 (12 s and
  // 30 s a run). Smoke: 120 and 300 (1 s and 2 s a run). --time_scale=X
  // sets both.
  struct Case {
    std::string name, label;
    double lo, hi, run_s, quick_scale, full_scale, smoke_scale;
    const char* original[2][5];  // before/after: success, mean wait, max waiters, errors, capacity
  };
  const std::vector<Case> cases = {
      {"hold200-600ms", "case 1: hold 200-600 ms, 2 min", 0.2, 0.6, 120, 40, 10, 120,
       {{"23%", "56,000", "64+", "yes", "-"}, {"100%", "2", "1", "0", "-"}}},
      {"hold1-10s", "case 2: hold 1-10 s, 10 min", 1.0, 10.0, 600, 100, 20, 300,
       {{"23%", "56,000", "64+", "yes", "-"}, {"21%", "4,279", "6", "0", "10.9"}}}};
  redis::EmbeddedServer server;
  redis::Client::Options co = server.client_options();
  co.command_timeout = 10s;
  co.max_connections = 256;  // 64 workers + the subscriber's callers, never starved
  redis::Client client(co);
  redis::Client probe(server.client_options());
  std::vector<Entry> entries, series;
  int family = 0;
  std::cout << "\nload_test: Poisson arrivals at 50/min on ONE key, 64 IO threads (a request holds its thread "
               "while it waits and holds;\nan arrival with no free thread queues); every duration / the case's "
               "time scale; figures below in the case study's unscaled units\n"
            << "before = PermitSemaphore(1) raw, try_set_permits on every request, wait 60 s; "
               "after = GuardedLock(max_waiters 32), wait 5 s; lease 30 s\n";
  for (const Case& k : cases) {
    // --only=hold200-600ms (or hold1-10s): just that case.
    if (!o.only.empty() && o.only.find("," + k.name + ",") == std::string::npos) continue;
    LoadResult r[2];
    LoadConfig c;
    const double scale = o.time_scale > 0 ? o.time_scale : o.sized(k.quick_scale, k.full_scale, k.smoke_scale);
    for (int impl = 0; impl < 2; ++impl) {
      c = LoadConfig{};
      c.hold_lo_s = k.lo;
      c.hold_hi_s = k.hi;
      c.run_s = k.run_s;
      c.time_scale = scale;
      c.sample_s = std::max(1.0, k.run_s / 120);
      c.guarded = impl == 1;
      c.wait_s = impl == 1 ? 5 : 60;
      c.key = "locklab:load_test:" + k.name;
      r[impl] = run_load_test(client, probe, c);
      const LoadResult& x = r[impl];
      const std::string impl_name = k.name + (impl == 1 ? ".after" : ".before");
      Entry e;
      e.name = "scenario_load_test/" + impl_name;
      e.family = family++;
      e.wall_ms = x.wall_s * 1e3;
      e.counters = {{"success_rate", x.success_rate()},
                    {"expected_success_limit", c.expected_success_limit()},
                    {"mean_wait_ms", x.mean_wait_ms},
                    {"mean_wait_served_ms", x.mean_wait_served_ms},
                    {"max_wait_ms", x.max_wait_ms},
                    {"max_waiters", double(x.max_waiters)},
                    {"max_queued", double(x.max_queued)},
                    {"max_busy_workers", double(x.max_busy)},
                    {"redis_errors", double(x.errors)},
                    {"lock_timeouts", double(x.timed_out)},
                    {"fast_fails", double(x.fast_failed)},
                    {"abandoned", double(x.abandoned)},
                    {"offered", double(x.offered)},
                    {"served", double(x.served)},
                    {"capacity_per_min", x.capacity_per_min},
                    {"expected_capacity_per_min", c.expected_capacity_per_min()},
                    {"max_holders", double(x.max_holders)},
                    {"scripts", x.server.scripts},
                    {"redis_cmds", x.server.calls},
                    {"server_cpu_ms", x.server.cpu * 1e3},
                    {"time_scale", scale}};
      // Only below capacity: over it a queue has no steady-state wait.
      if (c.expected_mean_wait_s() >= 0) {
        e.counters.emplace_back("expected_mean_wait_ms", c.expected_mean_wait_s() * 1e3);
        e.counters.emplace_back("ideal_mean_wait_ms", x.ideal_mean_wait_ms);
      }
      entries.push_back(e);
      // The waiter count over time: one entry per sample, `t:<unscaled s>` a
      // knob of the row (plot_waiters_over_time draws them; the bar chart
      // and the summary leave them out).
      for (std::size_t i = 0; i < x.samples.size(); ++i) {
        const LoadSample& sm = x.samples[i];
        Entry t;
        t.name = "scenario_load_test/" + impl_name + "/t:" + cell(double(i) * c.sample_s);
        t.family = -1;  // set below: after every table row
        t.counters = {{"t_s", sm.t_s},
                      {"lock_waiters", double(sm.waiters)},
                      {"queued", double(sm.queued)},
                      {"busy_workers", double(sm.busy)}};
        series.push_back(t);
      }
      std::cout << "." << std::flush;
    }
    std::cout << "\n\n" << k.label << " (time scale " << scale << ": " << cell(c.run_s / scale, 1)
              << " s a run here; expected capacity "
              << cell(c.expected_capacity_per_min(), 1) << "/min = 60 / mean hold " << cell(c.mean_hold_s(), 1)
              << " s, physical success limit " << percent(c.expected_success_limit()) << ")\n"
              << std::left << std::setw(30) << "" << std::right << std::setw(12) << "orig. before" << std::setw(12)
              << "orig. after" << std::setw(12) << "ours before" << std::setw(12) << "ours after" << "\n";
    auto row = [&](const std::string& what, const std::string& s0, const std::string& s1, const std::string& v0,
                   const std::string& v1) {
      std::cout << std::left << std::setw(30) << what << std::right << std::setw(12) << s0 << std::setw(12) << s1
                << std::setw(12) << v0 << std::setw(12) << v1 << "\n";
    };
    row("success rate", k.original[0][0], k.original[1][0], percent(r[0].success_rate()), percent(r[1].success_rate()));
    const char* limit = c.expected_success_limit() < 1 ? "~22%" : "-";
    row("  physical limit", limit, limit, percent(c.expected_success_limit()), percent(c.expected_success_limit()));
    row("mean wait (ms)", k.original[0][1], k.original[1][1], cell(r[0].mean_wait_ms), cell(r[1].mean_wait_ms));
    row("  M/G/1 expected (ms)", "-", "-",
        c.expected_mean_wait_s() < 0 ? "over cap." : cell(c.expected_mean_wait_s() * 1e3),
        c.expected_mean_wait_s() < 0 ? "over cap." : cell(c.expected_mean_wait_s() * 1e3));
    row("  ideal lock, these arrivals", "-", "-",
        c.expected_mean_wait_s() < 0 ? "over cap." : cell(r[0].ideal_mean_wait_ms),
        c.expected_mean_wait_s() < 0 ? "over cap." : cell(r[1].ideal_mean_wait_ms));
    row("  of the served (ms)", "-", "-", cell(r[0].mean_wait_served_ms), cell(r[1].mean_wait_served_ms));
    row("max wait (ms)", "-", "-", cell(r[0].max_wait_ms), cell(r[1].max_wait_ms));
    row("max concurrent waiters", k.original[0][2], k.original[1][2], std::to_string(r[0].max_waiters),
        std::to_string(r[1].max_waiters));
    row("max busy threads (of 64)", "64", "-", std::to_string(r[0].max_busy), std::to_string(r[1].max_busy));
    row("max queued for a thread", "-", "-", std::to_string(r[0].max_queued), std::to_string(r[1].max_queued));
    row("Redis errors", k.original[0][3], k.original[1][3], std::to_string(r[0].errors), std::to_string(r[1].errors));
    row("lock timeouts", "-", "-", std::to_string(r[0].timed_out), std::to_string(r[1].timed_out));
    row("fast-fails (gate)", "-", "-", std::to_string(r[0].fast_failed), std::to_string(r[1].fast_failed));
    row("abandoned at the end", "-", "-", std::to_string(r[0].abandoned), std::to_string(r[1].abandoned));
    row("offered / served", "-", "-", std::to_string(r[0].offered) + "/" + std::to_string(r[0].served),
        std::to_string(r[1].offered) + "/" + std::to_string(r[1].served));
    row("served/min (capacity)", k.original[0][4], k.original[1][4], cell(r[0].capacity_per_min, 1),
        cell(r[1].capacity_per_min, 1));
    row("Redis scripts", "-", "-", cell(r[0].server.scripts), cell(r[1].server.scripts));
    row("max holders at once", "1", "1", std::to_string(r[0].max_holders), std::to_string(r[1].max_holders));
  }
  std::cout << "(ticket-sale case study, quoted: the before column was one figure for both cases; capacity "
               "10.9/min from its text."
               "\n ours: waiters = requests on a thread inside the lock call, holder excluded; "
               "mean wait over all offered requests)\n";
  for (Entry& t : series) t.family = family;  // one family for the series: after the table rows
  entries.insert(entries.end(), series.begin(), series.end());
  write_json(o.out + "/scenario_load_test.json", "scenario_load_test", o.mode, entries);
}

// ------------------------------------------------------------ pool_rejection

// ------------------------------------------------------------ token sources

void run_token_sources_scenario(const Options& o) {
  const std::vector<int> waiters = !o.waiters.empty() ? o.waiters : std::vector<int>{1, 50};
  const ms duration(o.duration_ms > 0 ? o.duration_ms : o.sized(1'000, 3'000, 150));
  redis::EmbeddedServer redis_server;
  pg::ServerFromEnvOrEmbedded postgres;
  tokens::Servers servers{redis_server.client_options(), postgres.options()};
  std::vector<Entry> entries;
  struct Line {
    tokens::Source source;
    int waiters;
    tokens::Result r;
  };
  std::vector<Line> lines;
  int family = 0;
  for (const tokens::Source source : tokens::kAllSources) {
    for (int n : waiters) {
      tokens::Config c;
      c.source = source;
      c.waiters = n;
      c.duration = duration;
      const tokens::Result r = tokens::run(servers, c);
      lines.push_back({source, n, r});
      Entry e;
      e.name = std::string("scenario_token_sources/") + tokens::source_id(source) + "/waiters:" + std::to_string(n);
      e.family = family;
      e.wall_ms = r.wall_ms;
      e.counters = {{"p50_ms", r.p50_ms},
                    {"p95_ms", r.p95_ms},
                    {"max_ms", r.max_ms},
                    {"tokens", static_cast<double>(r.tokens)},
                    // tokens per second, all waiters together: the name every suite
                    // gives its throughput, so the plots draw it against waiters
                    {"items_per_second", r.tokens_per_s},
                    {"extra_round_trips_per_token", static_cast<double>(tokens::extra_round_trips(source))},
                    {"unique_and_increasing", r.unique_and_increasing ? 1.0 : 0.0},
                    {"resource_postgres", source == tokens::Source::kPgNextval ||
                                                  source == tokens::Source::kPgUpdateReturning
                                              ? 1.0
                                              : 0.0}};
      entries.push_back(e);
      std::cout << "." << std::flush;
    }
    ++family;
  }
  std::cout << "\n\ntoken_sources: one call that yields one fencing token, " << duration.count()
            << " ms a point, every waiter with its own connection; PostgreSQL: "
            << (postgres.embedded() != nullptr ? "embedded (fsync off, synchronous_commit off)" : postgres.describe())
            << "\n(coupon sale case study, p95 per token: Redis INCR 0.81 ms, its database 7.91 ms)\n\n"
            << std::left << std::setw(24) << "source" << std::right << std::setw(9) << "waiters" << std::setw(10)
            << "p50 ms" << std::setw(10) << "p95 ms" << std::setw(10) << "max ms" << std::setw(12) << "tokens/s"
            << std::setw(12) << "extra RTT" << std::setw(8) << "valid" << "\n";
  for (const Line& l : lines) {
    std::cout << std::left << std::setw(24) << tokens::source_id(l.source) << std::right << std::setw(9) << l.waiters
              << std::setw(10) << cell(l.r.p50_ms, 3) << std::setw(10) << cell(l.r.p95_ms, 3) << std::setw(10)
              << cell(l.r.max_ms, 2) << std::setw(12) << cell(l.r.tokens_per_s) << std::setw(12)
              << tokens::extra_round_trips(l.source) << std::setw(8) << (l.r.unique_and_increasing ? "yes" : "NO")
              << "\n";
  }
  std::cout << "(extra RTT: round trips a token adds to the acquire's own; valid: every waiter's tokens increased and "
               "no shared counter gave a number twice)\n";
  write_json(o.out + "/scenario_token_sources.json", "scenario_token_sources", o.mode, entries);
}

void run_pool_rejection_scenario(const Options& o) {
  // Quick: 10 unscaled seconds at time scale 5 (2 s a run; 1,300 arrivals/s,
  // a 3 s wait = 600 ms); full: 30 s at the case study's own speed; smoke:
  // 4 s at 5 (two stampedes: the value stays fresh 2 s). At 10 a
  // starved 2-core machine could not even serve the zero-wait refreshes in
  // time (one measured run: 103 rejections with wait 0).
  const double scale = o.time_scale > 0 ? o.time_scale : o.sized(5.0, 1.0, 5.0);
  const double run_s = o.sized(10.0, 30.0, 4.0);
  redis::EmbeddedServer server;
  redis::Client::Options co = server.client_options();
  co.command_timeout = 10s;
  redis::Client client(co);
  redis::Client probe(server.client_options());
  PoolResult r[2];
  PoolConfig c;
  std::vector<Entry> entries;
  for (int impl = 0; impl < 2; ++impl) {
    c = PoolConfig{};
    c.time_scale = scale;
    c.run_s = run_s;
    c.wait_s = impl == 0 ? 3 : 0;
    c.key = std::string("locklab:pool_rejection:") + (impl == 0 ? "wait3s" : "wait0");
    r[impl] = run_pool_rejection(client, probe, c);
    const PoolResult& x = r[impl];
    Entry e;
    e.name = std::string("scenario_pool_rejection/") + (impl == 0 ? "tryLock(wait=3s)" : "tryLock(wait=0)");
    e.family = impl;
    e.wall_ms = x.wall_s * 1e3;
    e.counters = {{"rejected_tasks", double(x.rejected)},
                  {"served_per_second", x.served_per_s},
                  {"redis_cpu_percent", x.redis_cpu_pct},
                  {"subscribes", x.server.subscribes},
                  {"publishes", x.server.publishes},
                  {"lock_acquisitions", double(x.acquisitions)},
                  {"lock_attempts", double(x.lock_attempts)},
                  {"lock_busy", double(x.lock_busy)},
                  {"reloads", double(x.reloads)},
                  {"stampedes", double(x.stampedes)},
                  {"requests", double(x.requests)},
                  {"served", double(x.served)},
                  {"served_stale", double(x.served_stale)},
                  {"tasks_submitted", double(x.tasks_submitted)},
                  {"tasks_run", double(x.tasks_run)},
                  {"max_pool_threads", double(x.max_threads)},
                  {"max_queued", double(x.max_queued)},
                  {"max_try_ms", x.max_try_ms},
                  {"redis_cmds", x.server.calls},
                  {"errors", double(x.errors)},
                  {"max_holders", double(x.max_holders)},
                  {"time_scale", scale}};
    entries.push_back(e);
    std::cout << "." << std::flush;
  }
  std::cout << "\n\npool_rejection: refresh executor core 2 / max 8 / queue 50 (reject when full), Poisson "
            << cell(c.rate_per_s) << " requests/s for " << cell(run_s) << " s, value fresh "
            << cell(c.fresh_s) << " s, reload " << cell(c.reload_s, 1) << " s under a PubSubLock (lease "
            << cell(c.lease_s) << " s); every stale read submits a refresh;\ntime scale " << scale
            << " (figures in the case study's unscaled units; Redis CPU as % of one core of real time)\n"
            << std::left << std::setw(28) << "" << std::right << std::setw(12) << "orig. before" << std::setw(12)
            << "orig. after" << std::setw(12) << "ours before" << std::setw(12) << "ours after" << "\n";
  auto row = [&](const std::string& what, const std::string& s0, const std::string& s1, const std::string& v0,
                 const std::string& v1) {
    std::cout << std::left << std::setw(28) << what << std::right << std::setw(12) << s0 << std::setw(12) << s1
              << std::setw(12) << v0 << std::setw(12) << v1 << "\n";
  };
  auto n = [](auto v) { return std::to_string(v); };
  row("lock wait", "3 s", "0", "3 s", "0");
  row("rejected tasks", "466", "0", n(r[0].rejected), n(r[1].rejected));
  row("served requests/s", "235", "260", cell(r[0].served_per_s), cell(r[1].served_per_s));
  row("Redis CPU", "0.06%", "0.03%", cell(r[0].redis_cpu_pct, 2) + "%", cell(r[1].redis_cpu_pct, 2) + "%");
  row("Redis commands", "-", "-", cell(r[0].server.calls), cell(r[1].server.calls));
  row("SUBSCRIBE calls", "-", "-", cell(r[0].server.subscribes), cell(r[1].server.subscribes));
  row("PUBLISH calls", "-", "-", cell(r[0].server.publishes), cell(r[1].server.publishes));
  row("lock acquisitions", "-", "-", n(r[0].acquisitions), n(r[1].acquisitions));
  row("lock attempts (scripts)", "-", "-", n(r[0].lock_attempts), n(r[1].lock_attempts));
  row("reloads / stampedes", "-", "-", n(r[0].reloads) + "/" + n(r[0].stampedes),
      n(r[1].reloads) + "/" + n(r[1].stampedes));
  row("requests / tasks run", "-", "-", n(r[0].requests) + "/" + n(r[0].tasks_run),
      n(r[1].requests) + "/" + n(r[1].tasks_run));
  row("max pool threads / queued", "8/50", "-", n(r[0].max_threads) + "/" + n(r[0].max_queued),
      n(r[1].max_threads) + "/" + n(r[1].max_queued));
  row("longest try_lock (ms)", "3,000", "0", cell(r[0].max_try_ms), cell(r[1].max_try_ms));
  row("errors", "-", "-", n(r[0].errors), n(r[1].errors));
  std::cout << "(drained thread pool case study, quoted; its TPS fell to 30 during the stampede: ours is the mean "
               "over the run)\n";
  write_json(o.out + "/scenario_pool_rejection.json", "scenario_pool_rejection", o.mode, entries);
}

// ------------------------------------------------------------ failover

void run_failover_scenario(const Options& o) {
  using failover::Row;
  const int runs = o.runs > 0 ? o.runs : o.sized(5, 10, 1);
  std::vector<Entry> entries;
  std::cout << "\nfailover: a primary, 2 replicas, 3 Sentinels (down-after 500 ms); A locks on the primary with "
               "replication held back, the primary is killed, B locks on the promoted replica\n\n"
            << std::left << std::setw(18) << "row" << std::right << std::setw(6) << "runs" << std::setw(14)
            << "double grant" << std::setw(10) << "phantom" << std::setw(12) << "A refused" << std::setw(12)
            << "key kept" << std::setw(14) << "equal tokens" << std::setw(16) << "failover ms" << "\n";
  int family = 0;
  for (Row row : failover::all_rows()) {
    const std::string name = failover::row_name(row);
    if (!o.only.empty() && o.only.find("," + name + ",") == std::string::npos) continue;
    int doubles = 0, phantoms = 0, refused = 0, kept = 0, equal = 0, errors = 0;
    std::vector<double> failover_ms;
    for (int run = 0; run < runs; ++run) {
      const failover::RunResult r = failover::run_once(row);
      if (!r.error.empty()) {
        ++errors;
        std::cout << "  " << name << " run " << run + 1 << ": " << r.error << "\n";
      }
      doubles += r.double_grant;
      phantoms += r.phantom;
      refused += r.a_not_replicated;
      kept += r.key_survived;
      equal += r.a_token > 0 && r.a_token == r.b_token;
      failover_ms.push_back(r.failover_ms);
      Entry e;
      e.name = "scenario_failover/" + name;
      e.family = family;
      e.repetitions = runs;
      e.repetition_index = run;
      e.wall_ms = r.wall_ms;
      e.counters = {{"double_grant", r.double_grant},     {"phantom_write", r.phantom},
                    {"a_granted", r.a_granted},           {"a_not_replicated", r.a_not_replicated},
                    {"b_granted", r.b_granted},           {"key_survived", r.key_survived},
                    {"stale_write_rejected", r.stale_rejected}, {"a_token", double(r.a_token)},
                    {"b_token", double(r.b_token)},       {"promoted_was_behind", r.promoted_was_behind},
                    {"failover_ms", r.failover_ms},       {"errors", r.error.empty() ? 0.0 : 1.0}};
      entries.push_back(e);
    }
    ++family;
    std::sort(failover_ms.begin(), failover_ms.end());
    auto of = [&](int n) { return std::to_string(n) + "/" + std::to_string(runs); };
    std::cout << std::left << std::setw(18) << name << std::right << std::setw(6) << runs << std::setw(14)
              << of(doubles) << std::setw(10) << of(phantoms) << std::setw(12) << of(refused) << std::setw(12)
              << of(kept) << std::setw(14) << (row == Row::kFenced ? of(equal) : "-") << std::setw(16)
              << (cell(failover_ms.front()) + ".." + cell(failover_ms.back()))
              << (errors > 0 ? "   errors " + of(errors) : "") << "\n";
  }
  std::cout << "(double grant: A and B both granted within A's 30 s lease; phantom: the resource accepted A's "
               "write after B's grant; A refused: NotReplicated;\n key kept: the promoted replica had A's key; "
               "equal tokens: the new primary issued B the token A holds)\n";
  write_json(o.out + "/scenario_failover.json", "scenario_failover", o.mode, entries);
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
