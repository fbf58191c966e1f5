// herd.cpp — `scenarios herd`, the ticket-sale semaphore herd: N waiters in
// each of P processes (child role "herd", herd_main below) on one
// PermitSemaphore(1), raw (try_set_permits and try_acquire on every request)
// vs GuardedLock. The engine lives here: no test runs it apart from the
// runner.
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
#include "benches/scenarios/coupon.hpp"
#include "benches/scenarios/load_test.hpp"
#include "distributed/child_process.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/guarded_lock.hpp"
#include "distributed/permit_semaphore.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

namespace {

struct HerdTally {
  std::int64_t acquisitions = 0, fast_fails = 0, timeouts = 0, errors = 0, max_waiting = 0, max_at_redis = 0;
};

void raise_max(std::atomic<std::int64_t>& m, std::int64_t v) {
  std::int64_t seen = m.load();
  while (v > seen && !m.compare_exchange_weak(seen, v)) {
  }
}

}  // namespace

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
      std::vector<ChildProcess> kids;  // killed and reaped if this point throws
      for (int p = 0; p < procs; ++p) {
        Args a{{"guarded", guarded ? "1" : "0"},
               {"waiters", std::to_string(n)},
               {"start_at", std::to_string(start_ms)},
               {"duration_ms", std::to_string(duration.count())},
               {"key", "locklab:herd"},
               {"port", std::to_string(server.port())},
               {"max_waiters", std::to_string(max_waiters)},
               {"out", dir + "/herd" + std::to_string(p)}};
        kids.emplace_back(spawn_role("herd", a));
        if (!kids.back().running()) throw std::runtime_error("cannot start a herd process");
      }
      std::this_thread::sleep_until(start_at - 20ms);
      const auto before = server_counters(probe);
      const auto t0 = Clock::now();
      HerdTally total;
      for (int p = 0; p < procs; ++p) {
        const int rc = kids[static_cast<std::size_t>(p)].wait(duration + 30s);
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
  std::error_code ignored;  // a leftover temporary folder is not worth failing the run for
  std::filesystem::remove_all(dir, ignored);
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

}  // namespace locklab::scenarios
