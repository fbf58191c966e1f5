// pool_rejection.cpp — `scenarios pool_rejection`: the drained thread pool,
// PubSubLock try_lock_for(3 s) vs try_lock_for(0) (pool_rejection.hpp).
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
#include "benches/scenarios/pool_rejection.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

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

}  // namespace locklab::scenarios
