// Suite `locks`: every local lock algorithm on the shared contention harness,
// with std::mutex as the baseline. Each waiter loops lock(); cs_ns of busy
// work; unlock(). Two critical-section lengths: cs_ns:0 (the hand-off cost
// alone) and cs_ns:1000 (~1 us of work while holding).
//
// The lessons the curves must show on this lab's 2-core machine (issue
// "Local locks"): spin locks collapse when waiters outnumber cores (a
// preempted holder or, for ticket/MCS, a preempted NEXT waiter stalls every
// spinner for a time slice); park-only pays a system call per hand-off;
// AdaptiveMutex tracks the better of the two and never falls below
// std::mutex. Counters per acquire come from each lock's LockStats:
// contended_acquires, spins, parks, wakes.
//
// Impl names contain no '/' or ':' (they would break the point-name grammar
// `<suite>/<Impl>/waiters:<N>/cs_ns:<v>`); std::mutex starts with "std::" so
// the plots grey it as a baseline. ReentrantLock (both fairness modes) and
// Semaphore(1) complete the JVM's toolbox beside the algorithms.
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "benches/harness/suite.hpp"
#include "primitives/adaptive_mutex.hpp"
#include "primitives/backoff_lock.hpp"
#include "primitives/mcs_lock.hpp"
#include "primitives/reentrant_lock.hpp"
#include "primitives/semaphore.hpp"
#include "primitives/tas_lock.hpp"
#include "primitives/ticket_lock.hpp"
#include "primitives/ttas_lock.hpp"

namespace locklab::bench {
namespace {

constexpr std::int64_t kCriticalSectionsNs[] = {0, 1000};

template <class L>
EventSource events_of(const L& lock) {
  if constexpr (requires { lock.stats(); }) {
    return [&lock] {
      const auto s = lock.stats();
      return EventCounts{{"contended_acquires", static_cast<double>(s.contended_acquires)},
                         {"spins", static_cast<double>(s.spins)},
                         {"parks", static_cast<double>(s.parks)},
                         {"wakes", static_cast<double>(s.wakes)}};
    };
  } else {
    return {};
  }
}

// Registers every point of one implementation; `make` builds a fresh lock
// per point (locks are neither copyable nor movable).
template <class L>
void register_lock(const SuiteOptions& o, const std::string& impl, std::function<std::unique_ptr<L>()> make) {
  for (std::int64_t cs : kCriticalSectionsNs) {
    for (int waiters : o.waiters) {
      Workload w{.waiters = waiters, .duration = o.duration, .cs_ns = cs};
      register_point(point_name(o.suite, impl, waiters, {{"cs_ns", cs}}), w, [make](const Workload& wl) {
        std::unique_ptr<L> lock = make();
        return run_lock_contention(*lock, wl, events_of(*lock));
      });
    }
  }
}

template <class L>
void register_lock(const SuiteOptions& o, const std::string& impl) {
  register_lock<L>(o, impl, [] { return std::make_unique<L>(); });
}

// Semaphore(1) as a lock, the seed's per-key lock: acquire/release under the
// Lockable names the harness drives.
class SemaphoreLock {
 public:
  explicit SemaphoreLock(Fairness fairness) : permits_(1, fairness) {}
  void lock() { permits_.acquire(); }
  void unlock() { permits_.release(); }
  LockStatsSnapshot stats() const noexcept { return permits_.stats(); }

 private:
  Semaphore permits_;
};

template <class L>
void register_fairness(const SuiteOptions& o, const std::string& impl, Fairness fairness) {
  register_lock<L>(o, impl, [fairness] { return std::make_unique<L>(fairness); });
}

void register_adaptive(const SuiteOptions& o, const std::string& impl, SpinPolicy policy) {
  register_lock<AdaptiveMutex>(o, impl, [policy] { return std::make_unique<AdaptiveMutex>(policy); });
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab;
  return bench::suite_main("locks", argc, argv, [](const bench::SuiteOptions& o) {
    bench::register_lock<std::mutex>(o, "std::mutex");
    bench::register_lock<TasLock>(o, "TasLock");
    bench::register_lock<TtasLock>(o, "TtasLock");
    bench::register_lock<BackoffLock>(o, "BackoffLock");
    bench::register_lock<TicketLock>(o, "TicketLock");
    bench::register_lock<McsLock>(o, "McsLock");
    bench::register_adaptive(o, "AdaptiveMutex", SpinPolicy::adaptive());
    bench::register_adaptive(o, "AdaptiveMutex(park-only)", SpinPolicy::park_only());
    bench::register_adaptive(o, "AdaptiveMutex(spin-only)", SpinPolicy::spin_only());
    bench::register_adaptive(o, "AdaptiveMutex(fixed-100)", SpinPolicy::fixed(100));
    bench::register_fairness<ReentrantLock>(o, "ReentrantLock(unfair)", Fairness::kUnfair);
    bench::register_fairness<ReentrantLock>(o, "ReentrantLock(fair)", Fairness::kFair);
    bench::register_fairness<bench::SemaphoreLock>(o, "Semaphore(1)", Fairness::kUnfair);
  });
}
