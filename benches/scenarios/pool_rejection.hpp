// pool_rejection.hpp — the cache-refresh lock of the drained thread pool
// (docs/case-studies.md#thread-pool-drained-by-a-blocking-trylock), the
// lock that exhausted a thread pool, as a reusable engine: a stampede of
// refresh tasks on a bounded executor, each taking a Redisson-like
// PubSubLock with a blocking wait ("before") or no wait at all ("after").
// Header-only so that benches/scenarios (the table) and
// tests/distributed/pool_rejection_scenario_test.cpp (the invariants) run
// the same code.
//
// What the original authors measured
// ----------------------------------
// A cache refreshed asynchronously on an executor with 2 core threads, 8
// at most and a queue of 50 (Java's ThreadPoolExecutor, AbortPolicy). Each
// refresh did tryLock(wait 3 s, lease 5 s). In a cache stampede the losers
// each sat on a pool thread for up to 3 s, the pool and its queue filled,
// and the executor threw RejectedExecutionException 466 times; TPS fell.
// The fix, tryLockAsync(wait 0, lease 5 s): a loser returns at once (no
// pub/sub subscription) and its caller keeps the stale value. Reported:
// rejections 466 -> 0, throughput 235 -> 260 requests/s, Redis CPU 0.06% ->
// 0.03%.
//
// How we scale it
// ---------------
// The case study's units, "unscaled", divided by time_scale (quick 5, full
// 1): requests arrive as a Poisson process at 260/s (the original healthy
// throughput) for 10 s; the cached value is fresh for 2 s after a refresh,
// then stale; EVERY request that reads it stale returns the stale value and
// submits a refresh task (the naive "if stale, refresh in the background"
// that makes a stampede; a request whose submit is rejected fails, as the
// RejectedExecutionException reaches it: it is a rejected request, not a
// served one). A refresh task takes the lock (blocking: try_lock_for(3 s,
// lease 5 s); non-blocking: try_lock_for(0, lease 5 s)), and if it gets it
// and the value is still stale, reloads it (0.5 s of "database"), marks it
// fresh and unlocks. So per stampede, ~0.5 s x 260/s = 130 tasks arrive
// while one reload runs: blocking, the first holds the lock, 7 more threads
// and 50 queue slots fill with tasks that wait for it, and the rest (~70)
// are rejected; with wait 0 every loser takes one round trip and its thread
// back. Over 10 s about 4 stampedes: a few hundred rejections against the
// original 466. Redis CPU is used_cpu_user + used_cpu_sys from INFO over
// the run, as a percentage of one core of REAL time (so x time_scale higher
// than the unscaled load would give; compare before vs after, not with the
// original authors' digits). SUBSCRIBE and PUBLISH calls (INFO
// commandstats) show the subscriptions a blocking wait costs and a zero
// wait does not.
//
// Why a pool of our own (BoundedExecutor below): nothing in the lab had
// ThreadPoolExecutor's core / max / bounded queue / reject rule (the
// io_bound bench's pool is fixed-size with an unbounded queue), and that
// rule is the mechanism of the case study's failure.
//
// What it teaches: a blocking wait inside an async worker turns lock
// contention into pool exhaustion, and pool exhaustion into failed
// requests that never touched the lock. Wait only where requests must
// queue in order; a refresh that someone else is already doing needs no
// wait at all.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benches/scenarios/load_test.hpp"
#include "distributed/client.hpp"
#include "distributed/pub_sub_lock.hpp"

namespace locklab::scenarios {

// Java's ThreadPoolExecutor with AbortPolicy, reduced to what the drained
// thread pool needs. submit(task):
//   1. fewer than `core` threads: start a thread for the task;
//   2. else the queue has room (< queue_capacity): enqueue;
//   3. else fewer than `max` threads: start a thread for the task;
//   4. else: rejected (returns false; the task is dropped).
// Threads beyond core never retire (Java's keepAlive is 60 s by default,
// longer than any run here). shutdown() runs what is queued, then joins;
// the destructor calls it. Thread-safe.
class BoundedExecutor {
 public:
  BoundedExecutor(int core, int max, std::size_t queue_capacity) : core_(core), max_(max), cap_(queue_capacity) {
    if (core < 0 || max < 1 || max < core) throw std::invalid_argument("BoundedExecutor: need 0 <= core <= max, max >= 1");
  }
  ~BoundedExecutor() { shutdown(); }
  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  // true: accepted (run on a thread, now or later); false: rejected, or
  // after shutdown.
  bool submit(std::function<void()> task) {
    std::lock_guard g(mu_);
    if (stop_) return false;
    if (static_cast<int>(threads_.size()) < core_) {
      start(std::move(task));
    } else if (queue_.size() < cap_) {
      queue_.push_back(std::move(task));
      max_queued_ = std::max(max_queued_, queue_.size());
      ready_.notify_one();
    } else if (static_cast<int>(threads_.size()) < max_) {
      start(std::move(task));
    } else {
      ++rejected_;
      return false;
    }
    ++accepted_;
    return true;
  }

  // Runs what is queued, then stops and joins the threads. Idempotent.
  void shutdown() {
    {
      std::lock_guard g(mu_);
      if (stop_ && threads_.empty()) return;
      stop_ = true;
    }
    ready_.notify_all();
    std::vector<std::thread> ts;
    {
      std::lock_guard g(mu_);
      ts.swap(threads_);
    }
    for (auto& t : ts) t.join();
  }

  std::uint64_t accepted() const { std::lock_guard g(mu_); return accepted_; }
  std::uint64_t rejected() const { std::lock_guard g(mu_); return rejected_; }
  std::uint64_t completed() const { std::lock_guard g(mu_); return completed_; }
  std::size_t max_queued() const { std::lock_guard g(mu_); return max_queued_; }
  int max_threads() const { std::lock_guard g(mu_); return peak_threads_; }
  int threads() const { std::lock_guard g(mu_); return static_cast<int>(threads_.size()); }

 private:
  // Pre: mu_ held.
  void start(std::function<void()> first) {
    threads_.emplace_back([this, first = std::move(first)]() mutable { work(std::move(first)); });
    peak_threads_ = std::max(peak_threads_, static_cast<int>(threads_.size()));
  }
  void work(std::function<void()> task) {
    for (;;) {
      if (task) {
        try {
          task();
        } catch (...) {
          // A task's exception is its own business (Java's would end the
          // worker and surface in afterExecute); the pool keeps going.
        }
        std::lock_guard g(mu_);
        ++completed_;
      }
      std::unique_lock lk(mu_);
      ready_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
  }

  const int core_, max_;
  const std::size_t cap_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  bool stop_ = false;
  std::uint64_t accepted_ = 0, rejected_ = 0, completed_ = 0;
  std::size_t max_queued_ = 0;
  int peak_threads_ = 0;
};

struct PoolConfig {
  // Unscaled units (seconds, per second); the engine divides by time_scale.
  double rate_per_s = 260;
  double run_s = 10;
  double fresh_s = 2;       // the value stays fresh this long after a reload
  double reload_s = 0.5;    // the "database" load under the lock
  double wait_s = 3;        // the refresh's lock wait: 3 (before) or 0 (after)
  double lease_s = 5;
  double time_scale = 10;
  int core = 2, max = 8;
  std::size_t queue = 50;
  std::uint64_t seed = 3;
  std::string key = "locklab:pool_rejection";
};

struct PoolResult {
  std::int64_t requests = 0, served = 0, served_stale = 0, rejected = 0;  // requests = served + rejected
  std::int64_t tasks_submitted = 0, tasks_run = 0;                       // submitted = run + rejected
  std::int64_t acquisitions = 0, lock_busy = 0, reloads = 0, stampedes = 0, errors = 0;
  std::int64_t max_holders = 0;   // the counter under the lock: must be 1
  std::int64_t max_threads = 0, max_queued = 0;
  std::uint64_t lock_attempts = 0;  // acquire scripts sent by the lock object
  double served_per_s = 0;          // unscaled units
  double redis_cpu_pct = 0;         // of one core, real time
  double wall_s = 0;
  double max_try_ms = 0;            // the longest try_lock_for call, unscaled ms
  ServerCounters server;            // deltas over the run
};

// Runs one configuration. Stops by itself: arrivals end after run_s, then
// the executor drains (each task is bounded by wait + reload). Throws
// std::invalid_argument for a nonsensical configuration.
inline PoolResult run_pool_rejection(redis::Client& client, redis::Client& probe, const PoolConfig& c) {
  using namespace load_detail;
  if (!(c.time_scale > 0) || !(c.rate_per_s > 0) || !(c.run_s > 0) || !(c.wait_s >= 0) || !(c.fresh_s > 0) ||
      !(c.reload_s >= 0) || !(c.lease_s > c.reload_s)) {
    throw std::invalid_argument("run_pool_rejection: bad configuration");
  }
  const double S = c.time_scale;
  auto real = [S](double seed_s) { return std::chrono::duration_cast<Clock::duration>(Seconds(seed_s / S)); };
  const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(real(c.wait_s));
  const auto lease_ms = std::chrono::ceil<std::chrono::milliseconds>(Seconds(c.lease_s / S));

  probe.command({"DEL", c.key});
  redis::PubSubLock lock(client, c.key);
  // The cache: fresh until this time (ns since t0; 0 = stale from the start,
  // the stampede's trigger). A counter of stampedes: a request (or a refresh task) that sees
  // the value turn stale for the first time since the last reload.
  std::atomic<std::int64_t> fresh_until_ns{0};
  std::atomic<bool> stale_seen{false};
  std::atomic<std::int64_t> acquisitions{0}, busy{0}, reloads{0}, errors{0}, holders{0}, max_holders{0}, stampedes{0};
  std::atomic<std::int64_t> max_try_ns{0};

  const ServerCounters before = server_counters(probe);
  const auto t0 = Clock::now();
  auto now_ns = [t0] { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(); };
  auto refresh = [&] {
    try {
      const auto start = Clock::now();
      const bool got = lock.try_lock_for(wait_ms, lease_ms);
      raise_max(max_try_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
      if (!got) {
        busy.fetch_add(1);  // someone else refreshes: keep the stale value
        return;
      }
      acquisitions.fetch_add(1);
      raise_max(max_holders, holders.fetch_add(1) + 1);
      if (now_ns() >= fresh_until_ns.load()) {  // still stale: reload
        // A task queued before the run's end can find the value stale during
        // the drain, when no request comes to see it: the period counts here.
        if (!stale_seen.exchange(true)) stampedes.fetch_add(1);
        std::this_thread::sleep_for(real(c.reload_s));
        fresh_until_ns.store(now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(real(c.fresh_s)).count());
        stale_seen.store(false);
        reloads.fetch_add(1);
      }
      holders.fetch_sub(1);
      lock.unlock();
    } catch (const std::exception&) {
      errors.fetch_add(1);  // LockLost (the lease ran out under a reload) or redis::Error
    }
  };

  std::int64_t requests = 0, served = 0, served_stale = 0, rejected = 0;
  {
    BoundedExecutor pool(c.core, c.max, c.queue);
    PoissonArrivals arrivals(c.rate_per_s * 60.0, S, c.seed);
    const auto end = t0 + real(c.run_s);
    for (auto at = t0 + std::chrono::duration_cast<Clock::duration>(Seconds(arrivals.next_gap_s())); at < end;
         at += std::chrono::duration_cast<Clock::duration>(Seconds(arrivals.next_gap_s()))) {
      std::this_thread::sleep_until(at);
      ++requests;
      if (now_ns() < fresh_until_ns.load()) {
        ++served;
        continue;
      }
      if (!stale_seen.exchange(true)) stampedes.fetch_add(1);
      if (pool.submit(refresh)) {
        ++served;
        ++served_stale;
      } else {
        ++rejected;  // RejectedExecutionException reached the request
      }
    }
    std::this_thread::sleep_until(end);
    pool.shutdown();
    PoolResult r;
    r.tasks_submitted = static_cast<std::int64_t>(pool.accepted() + pool.rejected());
    r.tasks_run = static_cast<std::int64_t>(pool.completed());
    r.max_threads = pool.max_threads();
    r.max_queued = static_cast<std::int64_t>(pool.max_queued());
    const auto t1 = Clock::now();
    r.server = server_counters(probe).since(before);
    r.requests = requests;
    r.served = served;
    r.served_stale = served_stale;
    r.rejected = rejected;
    r.acquisitions = acquisitions.load();
    r.lock_busy = busy.load();
    r.reloads = reloads.load();
    r.stampedes = stampedes.load();
    r.errors = errors.load();
    r.max_holders = max_holders.load();
    r.lock_attempts = lock.attempts();
    r.wall_s = Seconds(t1 - t0).count();
    r.served_per_s = double(served) / c.run_s;
    r.redis_cpu_pct = r.wall_s > 0 ? 100.0 * r.server.cpu / r.wall_s : 0;
    r.max_try_ms = double(max_try_ns.load()) * 1e-6 * S;
    return r;
  }
}

}  // namespace locklab::scenarios
