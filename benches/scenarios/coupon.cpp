// coupon.cpp — `scenarios coupon` (the coupon sale's table: RedLock normal,
// clock drift, drift + fencing) and `scenarios faults` (every fault with and
// without fencing, N runs each), both over the engine of coupon.hpp, against
// Redis or a PostgreSQL row (--resource). Also spawn_role: the coupon clients,
// the paused victim and the herd are this executable run again.
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
#include "benches/scenarios/coupon.hpp"
#include "distributed/child_process.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

namespace {

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
          // Accepted writes made after the writer's own lease ran out, the
          // victim's aside: a client stalled past its lease (coupon.hpp).
          {"late_writes", static_cast<double>(r.tally.late_writes)},
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

}  // namespace

pid_t spawn_role(const std::string& role, const Args& args) {
  return spawn_process({"/proc/self/exe", "--role=" + role, "--args=" + encode(args)});
}

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

}  // namespace locklab::scenarios
