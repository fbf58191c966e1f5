// load_test.hpp — the load test of the ticket-sale semaphore herd
// (docs/case-studies.md#semaphore-herd-at-a-ticket-sale) as a reusable
// engine: Poisson arrivals on ONE lock key, served by a bounded pool of "IO
// threads", before (a raw PermitSemaphore(1), 60 s wait, try_set_permits on
// every request) and after (GuardedLock: fast-fail gate, local semaphore,
// init cache, 5 s wait). Header-only so that benches/scenarios (the table)
// and tests/distributed/load_test_scenario_test.cpp (the invariants) run the
// same code.
//
// What the original authors measured
// ----------------------------------
// 50 requests/min on one key, each holding the permit 200-600 ms (case 1,
// 2 min) or 1-10 s (case 2, 10 min), from coroutines on Dispatchers.IO (64
// threads). Before the fix they reported 23% success, a mean wait of
// 56 s and "64+" concurrent waiters in BOTH cases (all IO threads blocked,
// Redis timeouts); after it, 100% / 2 ms / 1 waiter in case 1 and 21% /
// 4.3 s / 4-6 waiters in case 2. Case 2 is over capacity whatever the lock:
// a permit held 5.5 s on average serves 60 / 5.5 = 10.9 requests a minute,
// so at most 10.9 / 50 = 22% of the arrivals can succeed (the physical
// limit). The fix cannot raise that; it changes HOW the rest fail: at once
// or after 5 s, instead of after 60 s with a thread held all along.
//
// How we scale it
// ---------------
// Every duration (interarrival times, holds, waits, lease, run length,
// sampling period) is divided by time_scale; rates and capacities are
// reported back in the case study's units, "unscaled" (requests per unscaled
// minute: a minute of the original timeline). Redis round trips and thread
// wake-ups (~0.1-1 ms, more on a busy machine) do not scale: at time_scale
// 100 a 200 ms hold becomes 2 ms and every real millisecond of overhead reads
// as 100 unscaled ms of wait. So the defaults differ per case
// (scenarios.cpp): case 1, short holds, at 40 (3 s a run; full: 10), case 2
// at 100 (its 10 minutes in 6 s; full: 20).
//
// The pool: `workers` threads (64) take requests from an unbounded FIFO
// backlog, as coroutines wait for a free Dispatchers.IO thread. A request
// occupies its worker from the lock call to the release (waiting AND
// holding), so a slow lock takes threads away from everything else: the case
// study's near-deadlock. An arrival that finds no free worker is QUEUED, not
// failed (the lock's wait budget starts when a worker picks it up; its
// measured wait starts at arrival). At the end of the run arrivals stop,
// requests already on a worker finish (bounded by wait + hold), and what is
// still queued is counted as `abandoned` (a client that gave up when the load
// test ended). So every request ends in exactly one of: served, timed_out
// (the lock's wait ran out), fast_failed (GuardedLock's gate was full),
// errors (redis::Error or a lost permit), abandoned; offered is their sum
// (the test checks it).
//
// What each column means: success = served / offered; mean wait = mean over
// ALL offered requests of (decision - arrival), the decision being the
// acquisition, the failure, or the end of the run for an abandoned one (the
// original 4,279 ms after-fix figure for case 2 is this mean: most requests
// fail after the full 5 s); max waiters = the most requests on a worker and
// inside the lock call at once (the holder excluded); max queued = the most
// requests waiting for a worker; capacity = served per unscaled minute over
// the span from the first arrival to the last release. A sampler records
// waiters, queued and busy workers every sample period (an unscaled second,
// or coarser so that a series has <= ~120 points) for the plot.
//
// What it teaches: when arrivals outrun a lock's capacity, the waiters are
// a queue with no bound but the wait budget; with a 60 s budget and a pool
// shared with everything else, they fill the pool. A short budget bounds
// the queue by Little's law (waiters ~ arrival rate x wait = 50/min x 5 s
// ~ 4), the gate bounds it outright, and neither changes the capacity.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/error.hpp"
#include "distributed/guarded_lock.hpp"
#include "distributed/permit_semaphore.hpp"

namespace locklab::scenarios {

namespace load_detail {
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

inline void raise_max(std::atomic<std::int64_t>& m, std::int64_t v) {
  std::int64_t seen = m.load(std::memory_order_relaxed);
  while (v > seen && !m.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
  }
}
}  // namespace load_detail

// A Poisson process: exponential gaps with mean 60 / rate_per_min unscaled
// seconds, divided by time_scale. Seeded, so a run's arrival times repeat
// (the machine's timing does not).
class PoissonArrivals {
 public:
  PoissonArrivals(double rate_per_min, double time_scale, std::uint64_t seed)
      : gap_(rate_per_min / 60.0 * time_scale), rng_(seed) {
    if (!(rate_per_min > 0) || !(time_scale > 0)) throw std::invalid_argument("PoissonArrivals: rate and scale must be > 0");
  }
  // The next gap in real seconds.
  double next_gap_s() { return gap_(rng_); }

 private:
  std::exponential_distribution<double> gap_;  // parameter: arrivals per real second
  std::mt19937_64 rng_;
};

// Server-side counters from INFO (the herd scenario's and this one's):
// calls over INFO commandstats (INFO, FLUSHALL and CONFIG left out; a
// script's inner calls included), used_cpu_user + used_cpu_sys in seconds,
// scripts run (EVALSHA + EVAL), (S)SUBSCRIBE / (S)PUBLISH calls.
struct ServerCounters {
  double calls = 0, cpu = 0, scripts = 0, subscribes = 0, publishes = 0;
  // What happened between `before` and this reading.
  ServerCounters since(const ServerCounters& before) const {
    return {calls - before.calls, cpu - before.cpu, scripts - before.scripts, subscribes - before.subscribes,
            publishes - before.publishes};
  }
};
inline ServerCounters server_counters(redis::Client& probe) {
  ServerCounters c;
  std::istringstream stats(probe.command({"INFO", "commandstats"}).as_string());
  for (std::string line; std::getline(stats, line);) {
    const auto p = line.find("calls=");
    if (line.rfind("cmdstat_", 0) != 0 || p == std::string::npos) continue;
    if (line.rfind("cmdstat_info:", 0) == 0 || line.rfind("cmdstat_flushall:", 0) == 0 ||
        line.rfind("cmdstat_config", 0) == 0) {
      continue;
    }
    const double n = std::stod(line.substr(p + 6));
    c.calls += n;
    if (line.rfind("cmdstat_evalsha:", 0) == 0 || line.rfind("cmdstat_eval:", 0) == 0) c.scripts += n;
    // The sharded forms too: a cluster Client's locks SSUBSCRIBE / SPUBLISH.
    if (line.rfind("cmdstat_subscribe:", 0) == 0 || line.rfind("cmdstat_ssubscribe:", 0) == 0) c.subscribes += n;
    if (line.rfind("cmdstat_publish:", 0) == 0 || line.rfind("cmdstat_spublish:", 0) == 0) c.publishes += n;
  }
  std::istringstream info(probe.command({"INFO", "cpu"}).as_string());
  for (std::string line; std::getline(info, line);) {
    for (const char* k : {"used_cpu_user:", "used_cpu_sys:"}) {
      if (line.rfind(k, 0) == 0) c.cpu += std::stod(line.substr(std::string(k).size()));
    }
  }
  return c;
}

struct LoadConfig {
  // Unscaled units (seconds, per minute); the engine divides by time_scale.
  double rate_per_min = 50;
  double hold_lo_s = 0.2, hold_hi_s = 0.6;
  double run_s = 120;         // arrivals stop after this
  double wait_s = 60;         // the lock's wait budget
  double lease_s = 30;        // the permit's lease (> the longest hold)
  double time_scale = 100;
  double sample_s = 1;        // sampling period (unscaled seconds)
  int workers = 64;           // the "IO threads"
  bool guarded = false;       // false: raw PermitSemaphore ("before")
  std::int64_t max_waiters = 32;  // GuardedLock's gate (after)
  std::uint64_t seed = 1;     // arrivals and holds
  std::string key = "locklab:load_test";
  double mean_hold_s() const { return (hold_lo_s + hold_hi_s) / 2; }
  // The physical limit: one permit serves at most 60 / mean hold a minute.
  double expected_capacity_per_min() const { return 60.0 / mean_hold_s(); }
  double expected_success_limit() const { return std::min(1.0, expected_capacity_per_min() / rate_per_min); }
  // Below capacity, the mean wait of an M/G/1 queue (Pollaczek-Khinchine:
  // lambda E[S^2] / (2 (1 - rho)), S uniform on [lo, hi]), in unscaled seconds;
  // -1 at or over capacity (no steady state: the queue grows until the wait
  // budget or the pool stops it). Poisson arrivals wait even at 33% load;
  // evenly spaced ones (what the case study's 2 ms suggests) would not.
  double expected_mean_wait_s() const {
    const double lambda = rate_per_min / 60.0;
    const double rho = lambda * mean_hold_s();
    if (rho >= 1) return -1;
    const double es2 = (hold_lo_s * hold_lo_s + hold_lo_s * hold_hi_s + hold_hi_s * hold_hi_s) / 3.0;
    return lambda * es2 / (2.0 * (1.0 - rho));
  }
};

struct LoadSample {
  double t_s;  // unscaled seconds since the first arrival
  std::int64_t waiters, queued, busy;
};

struct LoadResult {
  std::int64_t offered = 0, served = 0, timed_out = 0, fast_failed = 0, errors = 0, abandoned = 0;
  std::int64_t lost_permits = 0;      // a release found the lease gone (counted in errors too)
  std::int64_t max_waiters = 0;       // on a worker, inside the lock call
  std::int64_t max_queued = 0;        // waiting for a worker
  std::int64_t max_busy = 0;          // workers taken (waiting or holding)
  std::int64_t max_holders = 0;       // the counter under the lock: must be 1
  std::int64_t max_gate = 0;          // guarded: GuardedLock::waiting(key) seen (<= max_waiters)
  double mean_wait_ms = 0;            // unscaled ms, all offered requests
  double mean_wait_served_ms = 0;     // unscaled ms, served requests only
  double max_wait_ms = 0;             // unscaled ms, the longest (decision - arrival)
  // The mean wait an ideal lock (zero overhead, never idle while a request
  // waits, no wait budget) would give THESE arrivals and holds: Lindley's
  // recursion W' = max(0, W + hold - gap). Any work-conserving order has the
  // same mean, so below capacity it is the measured mean minus the lock's
  // and the machine's overhead. Unscaled ms.
  double ideal_mean_wait_ms = 0;
  double capacity_per_min = 0;        // served per unscaled minute, first arrival .. last release
  double wall_s = 0;                  // real seconds
  ServerCounters server;              // deltas over the run
  redis::GuardedLock<redis::PermitSemaphore>::Counters guard{};
  std::vector<LoadSample> samples;
  double success_rate() const { return offered > 0 ? double(served) / double(offered) : 0.0; }
};

// Runs one case with one implementation on `client` (its max_connections
// must exceed config.workers; the key is deleted first). `probe` (may be
// the same Client) reads the server's counters. Stops by itself: arrivals
// end after run_s, each worker's request is bounded by wait + hold, queued
// requests are abandoned. Throws std::invalid_argument for a nonsensical
// configuration.
inline LoadResult run_load_test(redis::Client& client, redis::Client& probe, const LoadConfig& c) {
  using namespace load_detail;
  if (!(c.time_scale > 0) || !(c.rate_per_min > 0) || !(c.run_s > 0) || !(c.wait_s >= 0) || !(c.sample_s > 0) ||
      !(c.hold_lo_s >= 0) || c.hold_hi_s < c.hold_lo_s || !(c.lease_s > c.hold_hi_s) || c.workers < 1 ||
      c.max_waiters < 1) {
    throw std::invalid_argument("run_load_test: bad configuration");
  }
  const double S = c.time_scale;
  auto real = [S](double seed_s) {
    return std::chrono::duration_cast<Clock::duration>(Seconds(seed_s / S));
  };
  const auto wait = real(c.wait_s);
  const auto lease = std::chrono::ceil<std::chrono::milliseconds>(Seconds(c.lease_s / S));

  redis::PermitSemaphore raw(client, c.key);
  probe.command({"DEL", raw.name(), raw.timeout_key()});
  redis::GuardTraits<redis::PermitSemaphore> traits;
  traits.permits = 1;
  traits.lease = lease;
  using Guarded = redis::GuardedLock<redis::PermitSemaphore>;
  Guarded guarded([&client](const std::string& k) { return std::make_unique<redis::PermitSemaphore>(client, k); },
                  {.max_waiters = c.max_waiters}, traits);

  struct Request {
    Clock::time_point arrival;
    double hold_s;  // unscaled seconds, drawn at arrival (so holds repeat with the RNG seed)
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Request> backlog;  // guarded by mu
  bool closed = false;          // guarded by mu: no more requests will be taken

  std::atomic<std::int64_t> waiters{0}, busy{0}, holders{0};
  std::atomic<std::int64_t> max_waiters{0}, max_busy{0}, max_holders{0}, max_queued{0}, max_gate{0};
  std::atomic<std::int64_t> served{0}, timed_out{0}, fast{0}, errors{0}, lost{0}, abandoned{0}, offered{0};
  std::mutex wait_mu;
  double wait_sum_s = 0, wait_served_sum_s = 0, wait_max_s = 0;  // real seconds, guarded by wait_mu
  Clock::time_point last_release{};              // guarded by wait_mu

  auto record = [&](Clock::time_point arrival, Clock::time_point decided, bool ok) {
    const double w = Seconds(decided - arrival).count();
    std::lock_guard g(wait_mu);
    wait_sum_s += w;
    wait_max_s = std::max(wait_max_s, w);
    if (ok) wait_served_sum_s += w;
  };
  // The critical section: hold, with the holder counter that proves the
  // permit excluded everyone else (a second holder would raise it to 2).
  auto hold = [&](double hold_s) {
    raise_max(max_holders, holders.fetch_add(1) + 1);
    std::this_thread::sleep_for(real(hold_s));
    holders.fetch_sub(1);
  };
  auto serve = [&](const Request& r) {
    raise_max(max_waiters, waiters.fetch_add(1) + 1);
    bool in_call = true;
    auto leave_call = [&] {
      if (in_call) waiters.fetch_sub(1);
      in_call = false;
    };
    try {
      if (c.guarded) {
        auto g = guarded.try_acquire(c.key, wait);
        const auto now = Clock::now();
        leave_call();
        raise_max(max_gate, guarded.waiting(c.key));
        if (g) {
          record(r.arrival, now, true);
          hold(r.hold_s);
          try {
            g.release();
            served.fetch_add(1);
          } catch (const redis::PermitNotHeld&) {
            lost.fetch_add(1);
            errors.fetch_add(1);
          }
        } else if (g.outcome() == Guarded::Outcome::kFastFail) {
          record(r.arrival, now, false);
          fast.fetch_add(1);
        } else {
          record(r.arrival, now, false);
          timed_out.fetch_add(1);
        }
      } else {
        (void)raw.try_set_permits(1);  // the case study's "before": on every request
        auto id = raw.try_acquire(wait, lease);
        const auto now = Clock::now();
        leave_call();
        if (id) {
          record(r.arrival, now, true);
          hold(r.hold_s);
          try {
            raw.release(*id);
            served.fetch_add(1);
          } catch (const redis::PermitNotHeld&) {
            lost.fetch_add(1);
            errors.fetch_add(1);
          }
        } else {
          record(r.arrival, now, false);
          timed_out.fetch_add(1);
        }
      }
    } catch (const std::exception&) {
      leave_call();
      record(r.arrival, Clock::now(), false);
      errors.fetch_add(1);
    }
    std::lock_guard g(wait_mu);
    last_release = std::max(last_release, Clock::now());
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(c.workers));
  for (int i = 0; i < c.workers; ++i) {
    pool.emplace_back([&] {
      for (;;) {
        Request r;
        {
          std::unique_lock lk(mu);
          cv.wait(lk, [&] { return closed || !backlog.empty(); });
          if (closed) return;  // what is left is abandoned by the closer
          r = backlog.front();
          backlog.pop_front();
          raise_max(max_busy, busy.fetch_add(1) + 1);
        }
        serve(r);
        busy.fetch_sub(1);
      }
    });
  }

  // Warm-up on another key: load the scripts (SCRIPT LOAD on first use) and
  // start the pub/sub connection, so the first requests of the run do not
  // pay one-off costs that time_scale would magnify (1 ms = 100 unscaled ms).
  {
    redis::PermitSemaphore warm(client, c.key + ":warmup");
    (void)warm.try_set_permits(1);
    if (auto id = warm.try_acquire(std::chrono::milliseconds(0), lease)) warm.release(*id);
    (void)client.subscriber();
    probe.command({"DEL", warm.name(), warm.timeout_key()});
  }

  const ServerCounters before = server_counters(probe);
  const auto t0 = Clock::now();
  // Sampler: every sample period (real time), waiters / queued / busy, until
  // the pool is closed and drained.
  std::vector<LoadSample> samples;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_sampling = false;  // guarded by stop_mu
  std::thread sampler([&] {
    const auto period = real(c.sample_s);
    for (auto next = t0;; next += period) {
      std::int64_t q;
      {
        std::lock_guard g(mu);
        q = static_cast<std::int64_t>(backlog.size());
      }
      samples.push_back({Seconds(Clock::now() - t0).count() * S, waiters.load(), q, busy.load()});
      std::unique_lock lk(stop_mu);
      if (stop_cv.wait_until(lk, next + period, [&] { return stop_sampling; })) return;
    }
  });

  // Arrivals, on this thread, at scheduled times (a late wake-up does not
  // shift the schedule: the next arrival keeps its time).
  PoissonArrivals arrivals(c.rate_per_min, S, c.seed);
  std::mt19937_64 hold_rng(c.seed ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_real_distribution<double> hold_s(c.hold_lo_s, c.hold_hi_s);
  const auto end = t0 + real(c.run_s);
  double lindley_w = 0, lindley_sum = 0, prev_at_s = 0, prev_hold_s = 0;  // unscaled seconds
  std::int64_t lindley_n = 0;
  for (auto at = t0 + std::chrono::duration_cast<Clock::duration>(Seconds(arrivals.next_gap_s())); at < end;
       at += std::chrono::duration_cast<Clock::duration>(Seconds(arrivals.next_gap_s()))) {
    std::this_thread::sleep_until(at);
    const double h = hold_s(hold_rng);
    const double at_s = Seconds(at - t0).count() * S;
    if (lindley_n > 0) lindley_w = std::max(0.0, lindley_w + prev_hold_s - (at_s - prev_at_s));
    lindley_sum += lindley_w;
    ++lindley_n;
    prev_at_s = at_s;
    prev_hold_s = h;
    {
      std::lock_guard g(mu);
      backlog.push_back({at, h});
      raise_max(max_queued, static_cast<std::int64_t>(backlog.size()));
    }
    offered.fetch_add(1);
    cv.notify_one();
  }
  std::this_thread::sleep_until(end);
  // End of the run: close the backlog (what is queued is abandoned), let
  // the workers finish the requests they have.
  const auto closed_at = Clock::now();
  {
    std::lock_guard g(mu);
    closed = true;
    for (const Request& r : backlog) {
      record(r.arrival, closed_at, false);
      abandoned.fetch_add(1);
    }
    backlog.clear();
  }
  cv.notify_all();
  for (auto& t : pool) t.join();
  {
    std::lock_guard g(stop_mu);
    stop_sampling = true;
  }
  stop_cv.notify_all();
  sampler.join();
  const auto t1 = Clock::now();

  LoadResult r;
  r.server = server_counters(probe).since(before);
  r.offered = offered.load();
  r.served = served.load();
  r.timed_out = timed_out.load();
  r.fast_failed = fast.load();
  r.errors = errors.load();
  r.abandoned = abandoned.load();
  r.lost_permits = lost.load();
  r.max_waiters = max_waiters.load();
  r.max_queued = max_queued.load();
  r.max_busy = max_busy.load();
  r.max_holders = max_holders.load();
  r.max_gate = max_gate.load();
  r.mean_wait_ms = r.offered > 0 ? wait_sum_s * S * 1e3 / double(r.offered) : 0;
  r.max_wait_ms = wait_max_s * S * 1e3;
  r.ideal_mean_wait_ms = lindley_n > 0 ? lindley_sum * 1e3 / double(lindley_n) : 0;
  r.mean_wait_served_ms = r.served > 0 ? wait_served_sum_s * S * 1e3 / double(r.served) : 0;
  const double span_s = Seconds(std::max(last_release, end) - t0).count() * S;  // unscaled seconds
  r.capacity_per_min = span_s > 0 ? double(r.served) * 60.0 / span_s : 0;
  r.wall_s = Seconds(t1 - t0).count();
  r.guard = guarded.counters();
  r.samples = std::move(samples);
  return r;
}

}  // namespace locklab::scenarios
