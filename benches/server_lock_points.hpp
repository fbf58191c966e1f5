// server_lock_points.hpp — the parts of a benchmark point that measures a
// lock held by a server, written once for the suites that do:
// redis_locks_bench.cpp (the Redis locks), redis_locks_pg_bench.cpp
// (PostgreSQL's locks on the same curve, as that suite's points) and
// redis_rwlock_bench.cpp (the Redis read-write lock). Sharing them is what
// lets the PostgreSQL points overlay the Redis curve: one acquisition loop,
// one way to count a lost lease, one set of latency percentiles.
//
//   timed_acquisition     one waiter's iteration: lock() (timed), hold (a
//                         sleep: a distributed critical section waits on
//                         I/O, it does not spin), unlock(), think (a sleep)
//   WaiterTroubles        what went wrong in a run, shared by its waiters:
//                         lost leases counted, the first other error kept
//                         for after the run (never std::terminate from a
//                         waiter)
//   add_latencies         avg_ms, p50_ms, p95_ms, p99_ms of a run's
//                         latencies (every one timed, not sampled: a
//                         server round trip dwarfs two clock reads)
//   finish_curve_point    the end of a curve point: errors, lost leases,
//                         the pooled latencies
//   redis_server_counters commands executed and CPU used by a Redis server,
//                         from its INFO
//
// A lost lease (unlock() throws LockLost, or pg::SessionLost, which is one:
// the holder was descheduled past its lease, which a loaded machine does to
// a 100 ms lease) is counted and reported as lost_leases_per_acquire; any
// other exception fails the point with its message once the run is over.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <istream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "benches/harness/contention.hpp"
#include "distributed/client.hpp"
#include "distributed/lock_lost.hpp"

namespace locklab::bench {

struct WaiterTroubles {
  std::atomic<std::uint64_t> lost{0};
  std::mutex mu;
  std::string first_error;

  void error(const std::exception& e) {
    std::lock_guard g(mu);
    if (first_error.empty()) first_error = e.what();
  }
  // Call after the waiters joined (the join orders their writes first).
  void rethrow() const {
    if (!first_error.empty()) throw std::runtime_error("a waiter failed: " + first_error);
  }
};

// One iteration of a waiter on `lock` (anything with lock() and unlock()):
// appends lock()'s latency in ms to `waits_ms`, counts a lost lease, keeps
// any other error in `troubles`; thinks even after an error, so a failing
// lock does not turn the loop into a hot spin against the server.
template <class L>
void timed_acquisition(L& lock, std::chrono::microseconds hold, std::chrono::microseconds think,
                       std::vector<double>& waits_ms, WaiterTroubles& troubles) {
  using Clock = std::chrono::steady_clock;
  try {
    const auto start = Clock::now();
    lock.lock();
    waits_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::this_thread::sleep_for(hold);
    try {
      lock.unlock();
    } catch (const redis::LockLost&) {
      troubles.lost.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (const std::exception& e) {
    troubles.error(e);
  }
  std::this_thread::sleep_for(think);
}

// Appends avg_ms, p50_ms, p95_ms and p99_ms of `ms` to r.extra (nothing
// for no latencies). A percentile is the sorted sample at floor(p * n),
// clamped to the last.
inline void add_latencies(ContentionResult& r, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ms.size())))]; };
  double sum = 0;
  for (double v : ms) sum += v;
  r.extra.emplace_back("avg_ms", sum / static_cast<double>(ms.size()));
  r.extra.emplace_back("p50_ms", pct(0.50));
  r.extra.emplace_back("p95_ms", pct(0.95));
  r.extra.emplace_back("p99_ms", pct(0.99));
}

// After run_contention of waiters that each looped timed_acquisition into
// waits_ms[i]: throws the first waiter error, else makes `result` per
// acquisition, with the lost leases and every waiter's latencies.
inline void finish_curve_point(ContentionResult& result, const WaiterTroubles& troubles,
                               const std::vector<std::vector<double>>& waits_ms) {
  troubles.rethrow();
  result.per_unit = "acquire";
  result.event_deltas.emplace_back("lost_leases", static_cast<double>(troubles.lost.load()));
  std::vector<double> all;
  for (const auto& v : waits_ms) all.insert(all.end(), v.begin(), v.end());
  add_latencies(result, std::move(all));
}

// {commands executed, CPU seconds} of the server `probe` talks to: the sum
// of calls over INFO commandstats (a script's inner calls included) and
// used_cpu_user + used_cpu_sys. Cumulative since the server started, so a
// point takes the difference; the two INFO calls made here are subtracted.
// Two round trips, best on a probe Client of its own, so that they are not
// counted in the locks' Client's round_trips().
inline std::pair<double, double> redis_server_counters(redis::Client& probe) {
  double calls = 0, cpu = 0;
  std::istringstream stats(probe.command({"INFO", "commandstats"}).as_string());
  for (std::string line; std::getline(stats, line);) {
    auto p = line.find("calls=");
    if (line.rfind("cmdstat_", 0) == 0 && p != std::string::npos) calls += std::stod(line.substr(p + 6));
  }
  std::istringstream info(probe.command({"INFO", "cpu"}).as_string());
  for (std::string line; std::getline(info, line);) {
    for (const char* k : {"used_cpu_user:", "used_cpu_sys:"}) {
      if (line.rfind(k, 0) == 0) cpu += std::stod(line.substr(std::string(k).size()));
    }
  }
  return {calls - 2, cpu};  // the two INFO calls above are not the locks'
}

}  // namespace locklab::bench
