// missing_pause_bench.cpp — EXHIBIT missing_pause's demonstration: the lock
// without `pause` beside TtasLock (the same algorithm with it) on the shared
// harness, suite `museum_missing_pause`, the `locks` suite's workloads
// (cs_ns 0 and 1000). exercises/check.sh bug_museum --bench writes
// results/museum_missing_pause.json; ./lab plot draws
// results/plots/museum_missing_pause*.png.
#include <memory>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"
#include "exercises/bug_museum/missing_pause/spin_without_pause_lock.hpp"
#include "exercises/support/local_lock_bench.hpp"
#include "primitives/ttas_lock.hpp"

namespace {

using namespace locklab;

template <class L>
void register_impl(const bench::SuiteOptions& o, const std::string& impl) {
  for (std::int64_t cs_ns : {0, 1000}) {
    for (int waiters : o.waiters) {
      bench::Workload w{.waiters = waiters, .duration = o.duration, .cs_ns = cs_ns};
      bench::register_point(bench::point_name(o.suite, impl, waiters, {{"cs_ns", cs_ns}}), w,
                            [](const bench::Workload& wl) {
                              auto lock = std::make_unique<L>();
                              return bench::run_lock_contention(*lock, wl, exercises::lock_events(*lock));
                            });
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite_main("museum_missing_pause", argc, argv, [](const bench::SuiteOptions& o) {
    register_impl<museum::SpinWithoutPauseLock>(o, "museum.SpinWithoutPause");
    register_impl<TtasLock>(o, "TtasLock");
  });
}
