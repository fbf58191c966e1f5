// Suite `cs_sweep`: "locks aren't slow; contention is". A handful of local
// locks on the contention harness (lock(); cs_ns of busy work; unlock(); no
// think time) with the critical section swept over
//   cs_ns 0, 50, 200, 1000, 5000
// at 2 waiters (as many as the lab machine's cores: every waiter has a core)
// and 16 (8 per core: most waiters are not running).
//
// What to read from it: throughput against cs_ns, and the per-acquisition
// overhead 1 / throughput - cs_ns (the wall time per acquire that is not the
// work inside the section). At 2 waiters the overhead of every lock stays
// around a cache-line hand-off or less while the section grows, so a long
// section hides any lock; at 16 waiters a spin lock's overhead is scheduler
// time slices (a preempted holder, or for FIFO locks a preempted next
// waiter), whatever the section does.
//
// Why its own suite and not more workloads of `locks`: the locks suite's
// knob groups are read by several labs (the largest cs_ns is "the real
// critical section" of the local-vs-Redis overlay); five locks at two waiter
// counts would add sparse groups to all of them. Points are named like the
// locks suite's, `cs_sweep/<Impl>/waiters:<N>/cs_ns:<v>`.
//
// Waiters: 2 and 16 of the --waiters list (both are in the quick and full
// defaults); a --waiters list with neither runs the sweep at the counts given.
// Quick mode: 5 locks x 5 sections x 2 waiter counts = 50 points of 200 ms.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"
#include "benches/lock_points.hpp"
#include "primitives/adaptive_mutex.hpp"
#include "primitives/mcs_lock.hpp"
#include "primitives/reentrant_lock.hpp"
#include "primitives/ttas_lock.hpp"

namespace locklab::bench {
namespace {

constexpr std::int64_t kSweepCsNs[] = {0, 50, 200, 1000, 5000};
constexpr int kSweepWaiters[] = {2, 16};

std::vector<int> sweep_waiters(const SuiteOptions& o) {
  std::vector<int> out;
  for (int w : kSweepWaiters) {
    if (std::find(o.waiters.begin(), o.waiters.end(), w) != o.waiters.end()) out.push_back(w);
  }
  return out.empty() ? o.waiters : out;
}

template <class L>
void register_sweep(const SuiteOptions& o, const std::string& impl, std::function<std::unique_ptr<L>()> make) {
  for (std::int64_t cs : kSweepCsNs) {
    for (int waiters : sweep_waiters(o)) {
      Workload w{.waiters = waiters, .duration = o.duration, .cs_ns = cs};
      register_lock_point<L>(o, impl, make, w, {{"cs_ns", cs}});
    }
  }
}

template <class L>
void register_sweep(const SuiteOptions& o, const std::string& impl) {
  register_sweep<L>(o, impl, [] { return std::make_unique<L>(); });
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab;
  return bench::suite_main("cs_sweep", argc, argv, [](const bench::SuiteOptions& o) {
    bench::register_sweep<std::mutex>(o, "std::mutex");
    bench::register_sweep<TtasLock>(o, "TtasLock");
    bench::register_sweep<McsLock>(o, "McsLock");
    bench::register_sweep<AdaptiveMutex>(o, "AdaptiveMutex",
                                         [] { return std::make_unique<AdaptiveMutex>(SpinPolicy::adaptive()); });
    bench::register_sweep<ReentrantLock>(o, "ReentrantLock(unfair)",
                                         [] { return std::make_unique<ReentrantLock>(Fairness::kUnfair); });
  });
}
