// Suite `io_bound`: the virtual-vs-platform-thread experiment of the
// virtual-threads case
// (docs/case-studies.md#virtual-threads-on-io-bound-work) in C++. Tasks that
// spend all their time in blocking I/O (simulated by a sleep) are run by four
// executors (three kinds), and the question is what each one costs per task
// in throughput, latency, OS threads and memory as concurrency grows.
//
// One point
// ---------
// `concurrency` clients (the harness's `waiters`: 50, 100, 200) each keep one
// task in flight: a closed loop. A dispatcher (the process's main thread,
// like a server's acceptor) submits a task for every free client; the task,
// once run, does `io_ms` of blocking I/O and hands its client back, which
// asks for its next task at once.
// The executor is the `Impl` part of the name, one line apart in the code:
//   Fibers         a CarrierPool of `carriers` (2) carrier threads; the task
//                  is a fiber and its I/O is VirtualThread::sleep_for, which
//                  unmounts it: the case study's virtual threads
//                  (Executors.newVirtualThreadPerTaskExecutor). Stacks are
//                  Stack::kFixed (64 KiB from malloc), like a virtual
//                  thread's stack, which is a heap object.
//   Fibers(guard-page)  the same with CarrierPool's default Stack::kProtected:
//                  an mmap + mprotect per fiber and a munmap at its end. Every
//                  one of those takes the process's address-space lock for
//                  writing (and a munmap shoots down the other carriers'
//                  TLBs), so carriers that spawn a fiber per task queue on
//                  that lock. Measured on the lab VM at concurrency 200: at
//                  io_ms 100 (full) 3x the CPU of `Fibers`, 91% of its
//                  throughput, p95 142 ms instead of 113; at io_ms 20 (quick,
//                  ~10,000 spawns a second) 30-65% of its throughput over
//                  runs on the (busy) VM.
//                  A guard page is worth it for long-lived fibers, not for
//                  one per request.
//   ThreadPool     a fixed pool of `pool` (50) OS threads behind one FIFO
//                  queue; the I/O is std::this_thread::sleep_for, which
//                  blocks the worker (Executors.newFixedThreadPool(50)).
//   ThreadPerTask  a new, detached OS thread per task, the same sleep
//                  (new Thread(task).start()).
// Names: io_bound/<Impl>/waiters:<concurrency>/io_ms:<ms>/carriers:<C>/pool:<P>
// (every point names all the knobs, so one figure holds all the executors).
//
// What to expect (Little's law: throughput = in flight / latency). A task
// needs io_ms of waiting and microseconds of CPU, so an executor that can
// keep `concurrency` tasks waiting at once reaches concurrency / io_ms
// (500, 1,000, 2,000 tasks/s at 100 ms) with p95 ~ io_ms. The pool can keep
// only `pool` tasks waiting: it tops out at pool / io_ms (500/s) and the rest
// queue, so p95 grows to ~ concurrency / pool x io_ms (400 ms at 200). Fibers
// do it with `carriers` OS threads; thread-per-task with one OS thread per
// task in flight, created one after the other by the dispatcher (as an
// acceptor thread would), which is in the latency and can cap the rate. The
// original authors' JVM run saw virtual 697 req/s vs pool-50 394 req/s, p95
// 113 vs 365 ms, 29 vs 510 live threads (its ramp and its JVM's own threads
// differ: compare shapes, not numbers).
//
// What is reported (besides the harness's counters)
// -------------------------------------------------
// items_per_second: tasks completed inside the measured window / window (the
// window starts half an I/O time after the first submissions, so that the
// pool's lockstep waves are counted whole, and lasts --duration_ms; the tasks
// in flight at its end are drained, not counted). ops_per_waiter = tasks per
// client, so `fairness` says whether some client waited longer than others;
// cpu_per_wall is the process's CPU over warm-up + window per wall second.
//   p50_ms, p95_ms, p99_ms  latency of the counted tasks, from the moment
//                           the client asked (its previous task's end) to
//                           done: queueing, submission (thread creation on
//                           the dispatcher, a spawn) and the I/O
//   os_threads_peak         peak of /proc/self/status `Threads:` sampled
//                           every 2 ms from before the executor is built
//                           until it is torn down; includes this process's
//                           own 2 threads (the dispatcher and the sampler)
//   rss_peak_mib            VmHWM at the end of the point: the process's
//                           resident-memory high-water mark
// Both peaks are per process, which is why each point runs in a process of
// its own (below): the high-water mark of one point cannot leak into the next.
//
// One process per point
// ---------------------
// Like benches/pinning_bench.cpp: the suite binary measures nothing itself;
// each registered point re-executes this binary with the hidden flag
// --point=<name> (plus --duration_ms), which runs that one configuration,
// prints its result as a few text lines and exits; the parent parses them
// into the ContentionResult that Google Benchmark reports
// (benches/harness/point_process.hpp: the protocol and the wire format). Two reasons: Boost
// 1.74's work_stealing allows one multi-carrier pool per process
// (fibers/carrier_pool.hpp, trap 1), and VmHWM / thread peaks are per
// process. A child that hangs dies by its own alarm (duration + 60 s) and
// the point is marked failed. The same flag reproduces one point by hand:
//   bench_io_bound --point=io_bound/ThreadPool/waiters:200/io_ms:100/carriers:2/pool:50 --duration_ms=1000
//
// Flags besides the suite's (--mode, --duration_ms, --waiters = concurrency
// levels): --io_ms=N  --carriers=N  --pool=N. Quick mode: concurrency 50,
// 100, 200, io_ms 20 (the same shape, five times the rate; 200 ms a point:
// 12 processes, ~4 s). Full: the case study's sizes, io_ms 100, 1 s a point
// (10 I/O times), 5 repetitions interleaved (60 processes, ~75 s).
// `./lab test`'s smoke run (--duration_ms=100) takes ~3 s.
//
// Failure modes: a thread that cannot be created (ulimit -u, memory) fails
// the point with the system's message; the tasks already submitted are
// drained first, so nothing is left running behind the error.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "benches/harness/point_process.hpp"
#include "benches/harness/suite.hpp"
#include "fibers/carrier_pool.hpp"
#include "fibers/virtual_thread.hpp"

namespace locklab::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSuite = "io_bound";

struct Spec {
  std::string impl;
  int concurrency = 100;
  int io_ms = 100;
  int carriers = 2;
  int pool = 50;
};

std::string name_of(const Spec& s) {
  return point_name(kSuite, s.impl, s.concurrency,
                    {{"io_ms", s.io_ms}, {"carriers", s.carriers}, {"pool", s.pool}});
}

// The inverse of name_of.
Spec parse_spec(const std::string& name) {
  const PointSpec p = parse_point_name(name, kSuite, {"waiters", "io_ms", "carriers", "pool"});
  if (p.impl != "Fibers" && p.impl != "Fibers(guard-page)" && p.impl != "ThreadPool" && p.impl != "ThreadPerTask") {
    throw std::invalid_argument("--point: unknown executor " + p.impl +
                                " (Fibers, Fibers(guard-page), ThreadPool, ThreadPerTask)");
  }
  return Spec{.impl = p.impl, .concurrency = p.values[0], .io_ms = p.values[1], .carriers = p.values[2], .pool = p.values[3]};
}

// ---------------------------------------------------------- the executors
//
// Each has submit(task) (callable from the dispatcher thread only), io(d)
// (the blocking call a task makes: the one line that differs between a
// virtual and a platform thread) and shutdown() (waits for every submitted
// task to have returned and the executor's threads to be gone, where it has
// any of its own).

template <fibers::CarrierPool::Stack kStack>
class Fibers {
 public:
  explicit Fibers(const Spec& s) : pool_(fibers::CarrierPool::Options{.carriers = s.carriers, .stack = kStack}) {}
  void submit(std::function<void()> task) { pool_.spawn(std::move(task)); }
  // Unmounts the fiber: its carrier runs other fibers meanwhile.
  static void io(std::chrono::milliseconds d) { fibers::VirtualThread::sleep_for(d); }
  void shutdown() { pool_.join(); }

 private:
  fibers::CarrierPool pool_;
};

// Executors.newFixedThreadPool: `pool` workers, one mutex-protected FIFO.
class ThreadPool {
 public:
  explicit ThreadPool(const Spec& s) {
    workers_.reserve(static_cast<std::size_t>(s.pool));
    try {
      for (int i = 0; i < s.pool; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
      shutdown();
      throw;
    }
  }
  ~ThreadPool() { shutdown(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
  }
  // Blocks the worker thread: it serves nobody else meanwhile.
  static void io(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }
  // Runs what is queued, then stops and joins the workers. Idempotent.
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop_ and nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// new Thread(task).start(): a detached thread per task. The dispatcher's
// drain (every client back) is what "shutdown" waits for; a thread may still
// be exiting after it handed its client back, which is why the tasks hold
// the shared state by shared_ptr (see run_point).
class ThreadPerTask {
 public:
  explicit ThreadPerTask(const Spec&) {}
  // Throws std::runtime_error naming the cause when the thread cannot be
  // created (EAGAIN: ulimit -u, or no memory for another stack).
  void submit(std::function<void()> task) {
    try {
      std::thread(std::move(task)).detach();
    } catch (const std::system_error& e) {
      throw std::runtime_error(std::string("ThreadPerTask: cannot create another thread (") + e.what() +
                               "): see ulimit -u and ulimit -v");
    }
  }
  static void io(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }
  void shutdown() {}
};

// ------------------------------------------------------------ measurement

// One "<key>: <number> ..." line of /proc/self/status, or -1.
long proc_status(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::strtol(line.c_str() + key.size() + 1, nullptr, 10);
  }
  return -1;
}

// Samples the process's thread count every 2 ms on a thread of its own
// (counted too: it is one of the process's 2 baseline threads) until stop().
class ThreadSampler {
 public:
  ThreadSampler()
      : thread_([this] {
          std::unique_lock lock(mutex_);
          while (!stop_) {
            lock.unlock();
            const long n = proc_status("Threads");
            lock.lock();
            peak_ = std::max(peak_, n);
            wake_.wait_for(lock, std::chrono::milliseconds(2), [this] { return stop_; });
          }
        }) {}
  ~ThreadSampler() { stop(); }
  ThreadSampler(const ThreadSampler&) = delete;
  ThreadSampler& operator=(const ThreadSampler&) = delete;

  // Stops sampling (after one last sample) and returns the peak.
  long stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    peak_ = std::max(peak_, proc_status("Threads"));
    return peak_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  long peak_ = 0;
  std::thread thread_;  // last: starts after the members it uses exist
};

// What the dispatcher and the tasks share. Held by shared_ptr in every task,
// so a detached thread that is still exiting never touches freed memory.
struct Shared {
  std::mutex mutex;
  std::condition_variable client_back;
  // Clients with no task in flight, and since when each has been asking for
  // one: a closed loop's client asks again the moment its task completes.
  std::vector<std::pair<int, Clock::time_point>> free_clients;
  int in_flight = 0;
  Clock::time_point window_start;     // tasks completing in [window_start, deadline] count
  Clock::time_point deadline;         // and submissions stop here
  std::vector<std::uint64_t> done;    // per client, inside the window
  std::vector<double> latencies_ms;   // of the tasks counted in `done`
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(v.size()))));
  return v[std::min(rank, v.size()) - 1];
}

template <class Executor>
ContentionResult run_point(const Spec& spec, std::chrono::milliseconds duration) {
  const auto io = std::chrono::milliseconds(spec.io_ms);
  const auto n = static_cast<std::size_t>(spec.concurrency);
  auto shared = std::make_shared<Shared>();
  shared->done.assign(n, 0);

  ThreadSampler sampler;  // before the executor: its threads are in the peak
  Executor executor(spec);

  // The task: I/O, then hand the client back. Its latency runs from the
  // moment its client asked (not from submit()), so what the dispatcher spends
  // submitting -- a thread creation, a spawn -- and any backlog of clients
  // waiting for it count, as they would for a user. Completion takes the
  // shared mutex for a few hundred nanoseconds; on a fiber that briefly
  // blocks its carrier if the dispatcher holds it (a CompletableFuture
  // completion costs the same), never across a suspension.
  auto make_task = [&shared, io](int client, Clock::time_point asked) {
    return [s = shared, io, client, asked] {
      Executor::io(io);
      const Clock::time_point now = Clock::now();
      std::lock_guard lock(s->mutex);
      if (now >= s->window_start && now <= s->deadline) {
        ++s->done[static_cast<std::size_t>(client)];
        s->latencies_ms.push_back(std::chrono::duration<double, std::milli>(now - asked).count());
      }
      s->free_clients.emplace_back(client, now);
      --s->in_flight;
      s->client_back.notify_one();
    };
  };

  const double cpu_start = detail::process_cpu_seconds();
  const Clock::time_point start = Clock::now();
  std::exception_ptr failure;
  std::unique_lock lock(shared->mutex);
  // Half an I/O time of warm-up: a pool's tasks complete in lockstep waves,
  // one per io_ms after the start, and a window aligned with the start would
  // end just before a wave lands (losing up to one wave of the count).
  shared->window_start = start + io / 2;
  shared->deadline = shared->window_start + duration;
  for (int c = spec.concurrency - 1; c >= 0; --c) shared->free_clients.emplace_back(c, start);
  for (;;) {
    shared->client_back.wait_until(lock, shared->deadline, [&] { return !shared->free_clients.empty(); });
    if (Clock::now() >= shared->deadline) break;
    std::vector<std::pair<int, Clock::time_point>> clients;
    clients.swap(shared->free_clients);
    shared->in_flight += static_cast<int>(clients.size());
    lock.unlock();
    std::size_t submitted = 0;
    try {
      for (; submitted < clients.size(); ++submitted) {
        executor.submit(make_task(clients[submitted].first, clients[submitted].second));
      }
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure) {
      shared->in_flight -= static_cast<int>(clients.size() - submitted);
      break;
    }
  }
  const double cpu_end = detail::process_cpu_seconds();
  // Drain: every task in flight returns its client (bounded: io_ms plus the
  // queueing ahead of it; the child's alarm covers a bug).
  shared->client_back.wait(lock, [&] { return shared->in_flight == 0; });
  lock.unlock();
  executor.shutdown();
  const long threads_peak = sampler.stop();
  if (failure) std::rethrow_exception(failure);

  ContentionResult r;
  r.workload = Workload{.waiters = spec.concurrency, .duration = duration};
  r.wall_seconds = std::chrono::duration<double>(duration).count();
  // CPU is measured over warm-up + window and scaled to the window.
  r.cpu_seconds = (cpu_end - cpu_start) * std::chrono::duration<double>(duration).count() /
                  std::chrono::duration<double>(shared->deadline - start).count();
  std::lock_guard after(shared->mutex);  // every task is done; this orders their writes before our reads
  r.ops_per_waiter = shared->done;
  const auto& lat = shared->latencies_ms;
  r.extra = {{"p50_ms", percentile(lat, 0.50)},
             {"p95_ms", percentile(lat, 0.95)},
             {"p99_ms", percentile(lat, 0.99)},
             {"os_threads_peak", static_cast<double>(threads_peak)},
             {"rss_peak_mib", static_cast<double>(proc_status("VmHWM")) / 1024.0}};
  return r;
}

ContentionResult run_named_point(const std::string& name, std::chrono::milliseconds duration) {
  const Spec spec = parse_spec(name);
  if (spec.impl == "Fibers") return run_point<Fibers<fibers::CarrierPool::Stack::kFixed>>(spec, duration);
  if (spec.impl == "Fibers(guard-page)") return run_point<Fibers<fibers::CarrierPool::Stack::kProtected>>(spec, duration);
  if (spec.impl == "ThreadPool") return run_point<ThreadPool>(spec, duration);
  return run_point<ThreadPerTask>(spec, duration);
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  std::vector<std::string> args(argv, argv + argc);
  try {
    if (const auto point = take_point_request(args)) return point_child_main(*point, run_named_point);
    const std::string io_text = take_flag(args, "--io_ms");
    const std::string carriers_text = take_flag(args, "--carriers");
    const std::string pool_text = take_flag(args, "--pool");
    const int carriers = carriers_text.empty() ? 2 : parse_positive(carriers_text, "--carriers");
    const int pool = pool_text.empty() ? 50 : parse_positive(pool_text, "--pool");
    const bool waiters_given = has_flag(args, "--waiters");

    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    return suite_main(kSuite, static_cast<int>(cargs.size()), cargs.data(), [&](const SuiteOptions& o) {
      // --waiters is the concurrency here; the harness's thread-count
      // defaults (1..64, 1..128) are not this experiment's ramp.
      const std::vector<int> levels = waiters_given ? o.waiters : std::vector<int>{50, 100, 200};
      const int io_ms = io_text.empty() ? (o.mode == "full" ? 100 : 20) : parse_positive(io_text, "--io_ms");
      for (int concurrency : levels) {
        for (const char* impl : {"Fibers", "Fibers(guard-page)", "ThreadPool", "ThreadPerTask"}) {
          const Spec spec{.impl = impl, .concurrency = concurrency, .io_ms = io_ms, .carriers = carriers, .pool = pool};
          const std::string name = name_of(spec);
          register_point(name, Workload{.waiters = concurrency, .duration = o.duration},
                         [name](const Workload& w) { return measure_in_child(name, w); });
        }
      }
    });
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}
