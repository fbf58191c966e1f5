// Suite `physical_limits`: the floor every other curve is read against.
//
// No lock can hand itself from one core to another faster than the cache
// line holding it can travel, and no parking lock can wake a sleeper faster
// than the kernel can run it. These points measure those costs on the machine
// at hand, so a plot can say "this lock is within 2x of the hardware" instead
// of quoting someone else's numbers. Each point reports `floor_ns`, the cost
// of one event in nanoseconds, which `./lab plot` draws as a reference line:
//
//   AtomicRmw         one uncontended `lock xadd` on a line this core owns
//   Pause             one cpu_relax() (`pause`): the unit of every spin loop
//   CacheLineHandoff  one hand-off of a line between two threads that take
//                     turns writing it: the floor of any lock hand-off
//   FutexWakeToRun    from futex_wake() to the sleeper running (median; p50/p99
//                     in µs too): the floor of any parking lock's hand-off
//   SchedYield        one sched_yield() system call with nothing else to run
//
// All points stop by themselves after the suite's duration.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "benches/harness/suite.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab::bench {
namespace {

using Clock = std::chrono::steady_clock;

ContentionResult with_floor(ContentionResult r, double floor_ns) {
  r.extra.emplace_back("floor_ns", floor_ns);
  return r;
}

ContentionResult atomic_rmw(const Workload& w) {
  alignas(kCacheLineSize) std::atomic<std::uint64_t> word{0};
  ContentionResult r = run_contention(w, [&](int) { word.fetch_add(1, std::memory_order_relaxed); });
  return with_floor(r, r.ns_per_op());
}

ContentionResult pause(const Workload& w) {
  ContentionResult r = run_contention(w, [](int) { cpu_relax(); });
  return with_floor(r, r.ns_per_op());
}

ContentionResult sched_yield_call(const Workload& w) {
  ContentionResult r = run_contention(w, [](int) { sched_yield(); });
  return with_floor(r, r.ns_per_op());
}

// Two threads take turns: thread i waits until `turn` is i, then passes it on.
// Every pass moves the line to the other core and back, so the time per pass
// is one cache-line hand-off plus a store. Waiting checks `stop` too, so a
// thread never waits for a partner that has already left.
ContentionResult cache_line_handoff(const Workload& w) {
  struct alignas(kCacheLineSize) Line {
    std::atomic<int> turn{0};
  } line;
  alignas(kCacheLineSize) std::atomic<bool> stop{false};
  ContentionResult r;
  r.workload = w;
  r.ops_per_waiter.assign(2, 0);
  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  {
    std::vector<std::jthread> players;
    for (int me = 0; me < 2; ++me) {
      players.emplace_back([&, me] {
        std::uint64_t passes = 0;
        for (;;) {
          while (line.turn.load(std::memory_order_acquire) != me) {
            if (stop.load(std::memory_order_relaxed)) {
              r.ops_per_waiter[static_cast<std::size_t>(me)] = passes;
              return;
            }
          }
          line.turn.store(1 - me, std::memory_order_release);
          ++passes;
        }
      });
    }
    std::this_thread::sleep_for(w.duration);
    stop.store(true, std::memory_order_relaxed);
  }
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu_seconds = detail::process_cpu_seconds() - cpu0;
  return with_floor(r, r.ns_per_op());
}

// A waker bumps `seq` and calls futex_wake; the sleeper, parked in
// futex_wait, notes the time it runs again. The waker sleeps 100 µs between
// rounds so the sleeper is really asleep (not still on its way to the
// kernel) when the next wake comes.
ContentionResult futex_wake_to_run(const Workload& w) {
  alignas(kCacheLineSize) std::atomic<std::uint32_t> seq{0};
  alignas(kCacheLineSize) std::atomic<std::int64_t> woken_at_ns{0};
  alignas(kCacheLineSize) std::atomic<bool> stop{false};
  std::vector<double> latencies_ns;
  latencies_ns.reserve(static_cast<std::size_t>(w.duration / std::chrono::microseconds(100)) + 16);
  auto now_ns = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); };

  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  std::jthread sleeper([&] {
    std::uint32_t seen = 0;
    for (;;) {
      while (seq.load(std::memory_order_acquire) == seen) futex_wait(seq, seen);
      if (stop.load(std::memory_order_acquire)) return;
      latencies_ns.push_back(static_cast<double>(now_ns() - woken_at_ns.load(std::memory_order_relaxed)));
      seen = seq.load(std::memory_order_acquire);
    }
  });
  const auto deadline = start + w.duration;
  std::uint64_t wakes = 0;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    // The timestamp is published by the release increment of seq, which the
    // sleeper's acquire load of seq synchronises with.
    woken_at_ns.store(now_ns(), std::memory_order_relaxed);
    seq.fetch_add(1, std::memory_order_release);
    futex_wake_one(seq);
    ++wakes;
  }
  stop.store(true, std::memory_order_release);
  seq.fetch_add(1, std::memory_order_release);
  futex_wake_one(seq);
  sleeper.join();

  ContentionResult r;
  r.workload = w;
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu_seconds = detail::process_cpu_seconds() - cpu0;
  r.ops_per_waiter = {wakes, static_cast<std::uint64_t>(latencies_ns.size())};
  if (latencies_ns.empty()) throw std::runtime_error("futex wake-to-run: the sleeper never ran");
  auto percentile = [&](double p) {
    auto k = static_cast<std::size_t>(p * static_cast<double>(latencies_ns.size() - 1));
    std::nth_element(latencies_ns.begin(), latencies_ns.begin() + static_cast<std::ptrdiff_t>(k), latencies_ns.end());
    return latencies_ns[k];
  };
  const double p50 = percentile(0.50);
  const double p99 = percentile(0.99);
  r.extra.emplace_back("p50_us", p50 / 1e3);
  r.extra.emplace_back("p99_us", p99 / 1e3);
  return with_floor(r, p50);
}

void register_measure(const SuiteOptions& o, const std::string& name, int waiters,
                      ContentionResult (*measure)(const Workload&)) {
  register_point(point_name(o.suite, name, waiters), Workload{.waiters = waiters, .duration = o.duration}, measure);
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  return suite_main("physical_limits", argc, argv, [](const SuiteOptions& o) {
    register_measure(o, "AtomicRmw", 1, atomic_rmw);
    register_measure(o, "Pause", 1, pause);
    register_measure(o, "CacheLineHandoff", 2, cache_line_handoff);
    register_measure(o, "FutexWakeToRun", 2, futex_wake_to_run);
    register_measure(o, "SchedYield", 1, sched_yield_call);
  });
}
