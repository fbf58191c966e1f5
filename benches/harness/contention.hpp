// contention.hpp — the one contention harness every locklab suite uses, so a
// local counter, a spin lock, a fiber lock and a Redis lock are measured the
// same way and land on the same curve.
//
// What one measurement is
// -----------------------
// N waiter threads run `op` on one shared object in a loop until a shared
// deadline, then stop by themselves. The harness records how many operations
// each waiter completed, the wall time from the start signal until the last
// waiter left its loop, and the process CPU time over the same window.
//
// Why a fixed duration and not a fixed operation count
// ----------------------------------------------------
// Google Benchmark's own ->Threads(N) gives every thread the same iteration
// count. A FIFO lock (ticket, MCS) with more waiters than cores hands the lock
// to a thread that is not running, so one hand-off can cost a scheduler time
// slice (milliseconds): a fixed count of a few hundred thousand then takes
// minutes on 2 cores. A deadline bounds every point whatever the lock does,
// and it makes unfairness measurable: with equal counts, fairness would be
// 1.0 by construction.
//
// How a waiter sees the deadline
// ------------------------------
// The loop checks a shared atomic flag with a relaxed load (a plain load on
// x86, a line every core keeps in shared state until the end), not a clock:
// a clock read costs ~20 ns, more than the operations we measure. Relaxed is
// enough because the flag publishes no data; a waiter only needs to see it
// eventually, and the per-waiter results travel back through thread join,
// which is a full happens-before edge.
//
// What is reported (see report_to in suite.hpp for the JSON names)
// ---------------------------------------------------------------
// throughput (operations / wall second), ns per operation (its inverse: the
// system-wide time per operation), CPU time / wall time (2.0 = both cores
// busy; spinning shows as CPU burn even when throughput is low), fairness
// (min / max operations per waiter: 1 is perfectly even, 0 means a waiter
// starved), steady-state fairness (the same over the run after its first
// fifth, see below), and the deltas of family-specific event counts (CAS
// failures, spins, parks ...) divided by the operation count.
//
// Fairness over the whole run, and after the warm-up
// --------------------------------------------------
// The start signal wakes every waiter at once, but on 2 cores they start
// running over the next milliseconds, one time slice after another, and the
// first ones run alone until then. Over the whole run that start is part of
// the figure: on the reference Intel VM a fair ReentrantLock, which serves
// its queue in exact FIFO order, read 0.08-0.49 at 16 waiters (with 200 ns
// sections its first thread took 1,660 acquisitions in 300 ms, 400 of them
// on the fast path before anyone queued, and the other 15 took 1,256-1,261
// each). So the harness also counts each waiter's operations from a mark at
// a fifth of the duration, and reports min / max of those as
// `fairness_steady`: how evenly the lock serves threads that are all
// running. The mark costs the loop nothing: each waiter runs the same loop
// twice, first until a warm-up flag is raised, then until the stop flag
// (one flag load per operation either way). Both figures are kept:
// `fairness` includes the start, as every result before this one did, and a
// lock that lets one thread run alone for a while is unfair there too.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "benches/harness/busy_work.hpp"
#include "benches/harness/latency_sampler.hpp"

namespace locklab::bench {

// One point on a curve: how many waiters, for how long, and how much busy
// work (in nanoseconds, see busy_work.hpp) inside and outside the lock.
struct Workload {
  int waiters = 1;
  std::chrono::milliseconds duration{200};
  std::int64_t cs_ns = 0;     // inside the critical section (lock suites)
  std::int64_t think_ns = 0;  // after each operation, outside any lock
};

// Cumulative counts of family-specific events, e.g. {"cas_failures", 1234}.
// The harness samples them before and after a run and reports the difference
// per operation as "<name>_per_<unit>" (unit "op", or "acquire" for locks).
using EventCounts = std::vector<std::pair<std::string, double>>;
using EventSource = std::function<EventCounts()>;

struct ContentionResult {
  Workload workload;
  std::string per_unit = "op";
  std::vector<std::uint64_t> ops_per_waiter;
  double wall_seconds = 0;
  double cpu_seconds = 0;
  EventCounts event_deltas;  // after - before, not yet divided
  // Named values reported as they are (not divided by the operation count),
  // e.g. latency percentiles {"p99_us", 41.5}. Empty for most suites.
  EventCounts extra;

  std::uint64_t total_ops() const noexcept;
  double ops_per_second() const noexcept;
  double ns_per_op() const noexcept;
  double cpu_per_wall() const noexcept;
  // min / max operations per waiter, in [0, 1]; 1 for a single waiter.
  double fairness() const noexcept;
};

// The name of fairness over the run after its warm-up (the header says
// why), an `extra` of every run_contention result.
inline constexpr const char* kSteadyFairness = "fairness_steady";

namespace detail {
// min / max of `counts`, in [0, 1]: 0 for an empty list or all zeros.
double min_over_max(const std::vector<std::uint64_t>& counts) noexcept;
double process_cpu_seconds() noexcept;
void validate(const Workload& w);
EventCounts subtract(const EventCounts& after, const EventCounts& before);
}  // namespace detail

// Runs `op(waiter_index)` from w.waiters threads until w.duration has passed,
// with w.think_ns of busy work after each call. `events`, if given, is read
// just before the start signal and after all waiters joined. The result's
// `extra` holds kSteadyFairness.
// Throws std::invalid_argument for waiters < 1 or a non-positive duration.
template <class Op>
ContentionResult run_contention(const Workload& w, Op op, const EventSource& events = {}) {
  detail::validate(w);
  using Clock = std::chrono::steady_clock;
  ContentionResult result;
  result.workload = w;
  result.ops_per_waiter.assign(static_cast<std::size_t>(w.waiters), 0);
  std::vector<Clock::time_point> left_loop(static_cast<std::size_t>(w.waiters));
  std::vector<std::uint64_t> after_warmup(static_cast<std::size_t>(w.waiters), 0);

  std::latch ready(w.waiters);
  std::atomic<bool> go{false};
  std::atomic<bool> warmup_over{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(w.waiters));
  for (int i = 0; i < w.waiters; ++i) {
    threads.emplace_back([&, i] {
      ready.count_down();
      // Park, not spin, until the start: 64 spinning waiters on 2 cores
      // would delay the thread that has to give the signal.
      go.wait(false, std::memory_order_acquire);
      // The same loop twice: until the warm-up mark, then until the end.
      auto run_until = [&](const std::atomic<bool>& flag) {
        std::uint64_t n = 0;
        while (!flag.load(std::memory_order_relaxed)) {
          op(i);
          BusyWork::spin_ns(w.think_ns);
          ++n;
        }
        return n;
      };
      const std::uint64_t warmup = run_until(warmup_over);
      const std::uint64_t steady = run_until(stop);
      left_loop[static_cast<std::size_t>(i)] = Clock::now();
      result.ops_per_waiter[static_cast<std::size_t>(i)] = warmup + steady;
      after_warmup[static_cast<std::size_t>(i)] = steady;
    });
  }
  ready.wait();
  EventCounts before = events ? events() : EventCounts{};
  const double cpu_start = detail::process_cpu_seconds();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  go.notify_all();
  std::this_thread::sleep_until(start + w.duration / 5);
  warmup_over.store(true, std::memory_order_relaxed);
  std::this_thread::sleep_until(start + w.duration);
  stop.store(true, std::memory_order_relaxed);
  for (auto& t : threads) t.join();
  result.cpu_seconds = detail::process_cpu_seconds() - cpu_start;
  Clock::time_point last = start;
  for (auto t : left_loop) last = std::max(last, t);
  result.wall_seconds = std::chrono::duration<double>(last - start).count();
  if (events) result.event_deltas = detail::subtract(events(), before);
  result.extra.emplace_back(kSteadyFairness, detail::min_over_max(after_warmup));
  return result;
}

// The Lockable seam: any type with lock()/unlock() — a local lock, a fiber
// lock, a Redis lock, a student's lock — is driven the same way. One
// operation is one acquire, w.cs_ns of work while holding, and one release.
// Acquire latency (the lock() call, entry to return) is sampled per waiter
// (latency_sampler.hpp) and reported in `extra` as p50_us, p99_us and
// p999_us (the 99.9th percentile: the tail a bounded-unfairness goal is
// stated on; with 2048 samples per waiter it rests on >= 2 samples a waiter).
template <class L>
  requires requires(L& l) {
    l.lock();
    l.unlock();
  }
ContentionResult run_lock_contention(L& lock, const Workload& w, const EventSource& events = {}) {
  using Clock = std::chrono::steady_clock;
  std::vector<LatencySampler> samplers(static_cast<std::size_t>(std::max(w.waiters, 1)));
  ContentionResult r = run_contention(
      w,
      [&lock, &samplers, cs = w.cs_ns](int i) {
        LatencySampler& sampler = samplers[static_cast<std::size_t>(i)];
        if (sampler.due()) {
          const Clock::time_point t0 = Clock::now();
          lock.lock();
          sampler.record(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(),
                         std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count());
        } else {
          lock.lock();
        }
        BusyWork::spin_ns(cs);
        lock.unlock();
      },
      events);
  r.per_unit = "acquire";
  const LatencyDistribution latency(samplers);
  if (!latency.empty()) {
    r.extra.emplace_back("p50_us", latency.percentile_ns(0.50) / 1e3);
    r.extra.emplace_back("p99_us", latency.percentile_ns(0.99) / 1e3);
    r.extra.emplace_back("p999_us", latency.percentile_ns(0.999) / 1e3);
  }
  return r;
}

}  // namespace locklab::bench
