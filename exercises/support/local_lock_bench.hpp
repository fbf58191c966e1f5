// local_lock_bench.hpp — what an exercise's bench binary shares with the
// `locks` suite (benches/locks_bench.cpp), so that a student's lock lands on
// the same plots as the reference locks: the same suite name, the same three
// workloads, the same point names, the same per-acquire counters.
//
// An exercise bench is a main() of three lines:
//   return locklab::exercises::local_lock_bench_main<MyTicketLock>(argc, argv, "my.TicketLock");
// It is run by `exercises/check.sh NAME --bench`, which writes
// results/exercise_NAME.json; `./lab plot` merges every file of a suite, so
// the "locks" plots then show `my.TicketLock` in colour beside the others.
//
// Kept in step with locks_bench.cpp by hand (it is not ours to change): if
// that suite grows a workload, add it to kShapes here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"

namespace locklab::exercises {

struct LockBenchShape {
  std::int64_t cs_ns;
  std::int64_t think_ns_per_waiter;  // think_ns = this * waiters
};
// locks_bench.cpp's kShapes: the hand-off alone, ~1 us held, abseil's shape.
inline constexpr LockBenchShape kLockBenchShapes[] = {{0, 0}, {1000, 0}, {0, 100}};

template <class L>
bench::EventSource lock_events(const L& lock) {
  if constexpr (requires { lock.stats(); }) {
    return [&lock] {
      const auto s = lock.stats();
      return bench::EventCounts{{"contended_acquires", static_cast<double>(s.contended_acquires)},
                                {"spins", static_cast<double>(s.spins)},
                                {"parks", static_cast<double>(s.parks)},
                                {"wakes", static_cast<double>(s.wakes)}};
    };
  } else {
    return {};  // no stats(): the plot shows throughput, CPU and fairness only
  }
}

// main() of an exercise bench: suite `locks`, implementation `impl`, every
// waiter count of the mode times every shape; a fresh lock per point.
template <class L>
int local_lock_bench_main(int argc, char** argv, const std::string& impl) {
  return bench::suite_main("locks", argc, argv, [impl](const bench::SuiteOptions& o) {
    for (const LockBenchShape& shape : kLockBenchShapes) {
      for (int waiters : o.waiters) {
        bench::Workload w{.waiters = waiters,
                          .duration = o.duration,
                          .cs_ns = shape.cs_ns,
                          .think_ns = shape.think_ns_per_waiter * waiters};
        std::vector<bench::Knob> knobs{{"cs_ns", shape.cs_ns}};
        if (shape.think_ns_per_waiter != 0) knobs.push_back({"think_ns_per_waiter", shape.think_ns_per_waiter});
        bench::register_point(bench::point_name(o.suite, impl, waiters, knobs), w, [](const bench::Workload& wl) {
          auto lock = std::make_unique<L>();
          return bench::run_lock_contention(*lock, wl, lock_events(*lock));
        });
      }
    }
  });
}

}  // namespace locklab::exercises
