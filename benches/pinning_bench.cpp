// Suite `pinning`: virtual threads (Boost fibers on a CarrierPool) and what a
// pinned carrier does to everybody else. The lesson of the virtual-threads
// case (docs/case-studies.md#virtual-threads-on-io-bound-work; JEP 444 / JEP
// 491): a virtual thread that blocks while holding an OS-level monitor pins
// its carrier, and when the carriers run out, work that never touches the
// lock stalls too.
//
// One point
// ---------
// `waiters` fibers (default 1,000) on `carriers` carrier threads. Half are
// *lockers*: take lock number (i/2 mod K) of K locks (default 16), do
// `io_ms` (default 10 ms) of simulated blocking I/O with
// VirtualThread::sleep_for, release, yield. The other half are *bystanders*:
// the same I/O, no lock. Every fiber repeats until the point's deadline. Three
// implementations (the `Impl` part of the name), one line apart in the code:
//   NoLock          lockers skip the lock: the ceiling
//                   (waiters / io_ms = 100,000 tasks/s at 1,000 fibers)
//   FiberMutex      FiberLock<ParkFiber>: waiting and holding suspend the
//                   fiber, carriers stay free. Lockers are capped by the
//                   locks (K / io_ms = 1,600/s); bystanders should not notice
//   PinningMonitor  FiberLock<ParkCarrier>: JDK 21 `synchronized`. The holder
//                   is pinned, so its I/O blocks the carrier, and waiters
//                   block their carriers in the kernel. Lockers are capped by
//                   the *carriers* (carriers / io_ms), and bystanders only
//                   run in the gaps: they collapse.
// Names: pinning/<Impl>/waiters:<fibers>/carriers:<C>/locks:<K>/io_ms:<ms>.
//
// What is reported (besides the harness's counters): items_per_second is all
// completed tasks; lockers_per_second and bystanders_per_second split it;
// pinned_events / pinned_waits / pinned_holds are the PinningDetector's counts
// inside the measured window (waits: a carrier blocked waiting for a monitor;
// holds: a carrier blocked by I/O under a monitor); detector_coverage is
// detected pinned holds / pinned I/Os performed over the whole run (1.0 = the
// detector saw every pinned acquisition, the goal); fairness is min /
// max tasks per fiber (0 when some fiber never completed a task).
//
// Goals (measured, never asserted): FiberMutex bystanders/s within 5% of
// NoLock's; PinningMonitor bystanders/s collapse, and its lockers/s grow with
// carriers (1, 2, 4), not with fibers. The research run on the lab machine
// saw ~48,000/s (NoLock), ~1,500 lockers/s (FiberMutex), bystanders ~50/s
// (pinned, 2 carriers).
//
// One process per point (Boost 1.74's work_stealing trap)
// -------------------------------------------------------
// work_stealing keeps static state, so a process can build one multi-carrier
// pool, once (see fibers/carrier_pool.hpp). So the suite binary measures
// nothing itself: each registered point re-executes this binary with the
// hidden flag --point=<name> (plus --duration_ms), which builds a fresh pool,
// runs that one configuration, prints its result as a few text lines on
// stdout and exits; the parent parses them into the ContentionResult that
// Google Benchmark reports (benches/harness/point_process.hpp: the protocol,
// the wire format, the bounds). A child that hangs is killed by its own alarm
// (duration + 60 s) and the point is marked failed. The same flag reproduces
// one point by hand:
//   bench_pinning --point=pinning/PinningMonitor/waiters:1000/carriers:2/locks:16/io_ms:10 --duration_ms=500
//
// Flags besides the suite's (--mode, --duration_ms, --waiters = fiber
// counts): --carriers=1,2,4  --locks=16  --io_ms=10. Quick mode: 1,000
// fibers, carriers 1, 2, 4, 200 ms a point (9 points, a few seconds). Full:
// 250 and 1,000 fibers, 1 s a point, 5 repetitions (90 runs, ~2 minutes).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/fiber/operations.hpp>

#include "benches/harness/point_process.hpp"
#include "benches/harness/suite.hpp"
#include "fibers/carrier_pool.hpp"
#include "fibers/fiber_lock.hpp"
#include "fibers/virtual_thread.hpp"

namespace locklab::bench {
namespace {

using Clock = std::chrono::steady_clock;
using fibers::CarrierPool;
using fibers::PinningEvent;
using fibers::VirtualThread;

constexpr const char* kSuite = "pinning";

struct Spec {
  std::string impl;
  int fibers = 1000;
  int carriers = 2;
  int locks = 16;
  int io_ms = 10;
};

std::string name_of(const Spec& s) {
  return point_name(kSuite, s.impl, s.fibers, {{"carriers", s.carriers}, {"locks", s.locks}, {"io_ms", s.io_ms}});
}

// The inverse of name_of: "pinning/<Impl>/waiters:N/carriers:C/locks:K/io_ms:M".
Spec parse_spec(const std::string& name) {
  const PointSpec p = parse_point_name(name, kSuite, {"waiters", "carriers", "locks", "io_ms"});
  if (p.impl != "NoLock" && p.impl != "FiberMutex" && p.impl != "PinningMonitor") {
    throw std::invalid_argument("--point: unknown implementation " + p.impl);
  }
  const Spec s{.impl = p.impl, .fibers = p.values[0], .carriers = p.values[1], .locks = p.values[2], .io_ms = p.values[3]};
  if (s.fibers < 2) throw std::invalid_argument("--point: at least 2 fibers (a locker and a bystander)");
  return s;
}

// ---------------------------------------------------------------- the child

// The no-lock baseline, shaped like a FiberLock.
struct NoLock {
  explicit NoLock(const char*) {}
  void lock() {}
  void unlock() {}
  static constexpr bool pins_carrier() noexcept { return false; }
};

// Runs one configuration in this process and returns its result.
template <class Lock>
ContentionResult run_point(const Spec& spec, std::chrono::milliseconds duration) {
  CarrierPool pool(CarrierPool::Options{.carriers = spec.carriers, .keep_pinning_events = 4});
  std::vector<std::unique_ptr<Lock>> locks;
  for (int k = 0; k < spec.locks; ++k) locks.push_back(std::make_unique<Lock>("pinning-lock"));
  const auto io = std::chrono::milliseconds(spec.io_ms);

  // Each fiber writes only its own slot; read after join (a happens-before edge).
  std::vector<std::uint64_t> done(static_cast<std::size_t>(spec.fibers), 0);
  std::atomic<std::int64_t> ios_while_holding{0};
  // All fibers start together, after the spawning is surely over.
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(50) + spec.fibers * std::chrono::microseconds(50);
  const Clock::time_point deadline = start + duration;

  for (int i = 0; i < spec.fibers; ++i) {
    const bool locker = i % 2 == 0;
    Lock* lock = locks[static_cast<std::size_t>((i / 2) % spec.locks)].get();
    std::uint64_t* mine = &done[static_cast<std::size_t>(i)];
    pool.spawn([=, &ios_while_holding] {
      boost::this_fiber::sleep_until(start);
      std::int64_t held_ios = 0;
      while (Clock::now() < deadline) {
        if (locker) {
          lock->lock();
          // After the deadline, release at once: the run drains in a few
          // milliseconds instead of one I/O per queued locker.
          if (Clock::now() < deadline) {
            VirtualThread::sleep_for(io);
            ++held_ios;
          }
          lock->unlock();
        } else {
          VirtualThread::sleep_for(io);
        }
        if (Clock::now() < deadline) ++*mine;  // only tasks completed inside the window count
        boost::this_fiber::yield();
      }
      ios_while_holding.fetch_add(held_ios, std::memory_order_relaxed);
    });
  }

  auto pinned = [&pool] {
    return EventCounts{
        {"waits", static_cast<double>(pool.detector().count(PinningEvent::Kind::kWaitingForLock))},
        {"holds", static_cast<double>(pool.detector().count(PinningEvent::Kind::kBlockedWhileHolding))}};
  };
  std::this_thread::sleep_until(start);
  const double cpu_start = detail::process_cpu_seconds();
  const EventCounts before = pinned();
  std::this_thread::sleep_until(deadline);
  const double cpu_end = detail::process_cpu_seconds();
  const EventCounts in_window = detail::subtract(pinned(), before);
  pool.join();

  ContentionResult r;
  r.workload = Workload{.waiters = spec.fibers, .duration = duration};
  r.ops_per_waiter = done;
  r.wall_seconds = std::chrono::duration<double>(deadline - start).count();
  r.cpu_seconds = cpu_end - cpu_start;
  double lockers = 0, bystanders = 0;
  for (std::size_t i = 0; i < done.size(); ++i) (i % 2 == 0 ? lockers : bystanders) += static_cast<double>(done[i]);
  const double waits = in_window[0].second, holds = in_window[1].second;
  r.event_deltas = {{"pinned_events", waits + holds}};
  const double expected_holds = Lock::pins_carrier() ? static_cast<double>(ios_while_holding.load()) : 0.0;
  const double detected_holds =
      static_cast<double>(pool.detector().count(PinningEvent::Kind::kBlockedWhileHolding));
  r.extra = {{"lockers_per_second", lockers / r.wall_seconds},
             {"bystanders_per_second", bystanders / r.wall_seconds},
             {"pinned_events", waits + holds},
             {"pinned_waits", waits},
             {"pinned_holds", holds},
             {"detector_coverage", expected_holds > 0 ? detected_holds / expected_holds : 1.0}};
  return r;
}

ContentionResult run_named_point(const std::string& name, std::chrono::milliseconds duration) {
  const Spec spec = parse_spec(name);
  if (spec.impl == "NoLock") return run_point<NoLock>(spec, duration);
  if (spec.impl == "FiberMutex") return run_point<fibers::FiberMutex>(spec, duration);
  return run_point<fibers::PinningMonitor>(spec, duration);
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  std::vector<std::string> args(argv, argv + argc);
  try {
    if (const auto point = take_point_request(args)) return point_child_main(*point, run_named_point);
    const std::string carriers_text = take_flag(args, "--carriers");
    const std::string locks_text = take_flag(args, "--locks");
    const std::string io_text = take_flag(args, "--io_ms");
    const std::vector<int> carriers = carriers_text.empty() ? std::vector<int>{1, 2, 4} : parse_positive_list(carriers_text, "--carriers");
    const int locks = locks_text.empty() ? 16 : parse_positive(locks_text, "--locks");
    const int io_ms = io_text.empty() ? 10 : parse_positive(io_text, "--io_ms");
    const bool waiters_given = has_flag(args, "--waiters");

    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    return suite_main(kSuite, static_cast<int>(cargs.size()), cargs.data(), [&](const SuiteOptions& o) {
      // --waiters counts fibers here; the harness's thread-count defaults
      // (1..64, 1..128) mean nothing for a pool of virtual threads.
      std::vector<int> fiber_counts = waiters_given ? o.waiters : (o.mode == "full" ? std::vector<int>{250, 1000} : std::vector<int>{1000});
      for (int fibers : fiber_counts) {
        for (int c : carriers) {
          for (const char* impl : {"NoLock", "FiberMutex", "PinningMonitor"}) {
            const Spec spec{.impl = impl, .fibers = std::max(fibers, 2), .carriers = c, .locks = locks, .io_ms = io_ms};
            const std::string name = name_of(spec);
            register_point(name, Workload{.waiters = spec.fibers, .duration = o.duration},
                           [name](const Workload& w) { return measure_in_child(name, w); });
          }
        }
      }
    });
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}
