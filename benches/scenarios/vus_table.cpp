// vus_table.cpp — `scenarios vus_table`: the k6 lock table (vus_table.hpp).
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
#include "benches/scenarios/vus_table.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

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

}  // namespace locklab::scenarios
