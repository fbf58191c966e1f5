// load_test.cpp — `scenarios load_test`: the ticket-sale load test, raw
// PermitSemaphore vs GuardedLock under Poisson arrivals (load_test.hpp).
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
#include "benches/scenarios/load_test.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

namespace {

std::string percent(double v) { return cell(100.0 * v, 0) + "%"; }

}  // namespace

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

}  // namespace locklab::scenarios
