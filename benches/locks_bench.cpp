// Suite `locks`: every local lock algorithm on the shared contention harness,
// beside the locks other people ship (benches/local_peers.hpp). Each waiter
// loops lock(); cs_ns of busy work; unlock(); think_ns of busy work. Four
// workloads, each at every waiter count:
//   cs_ns:0                          the hand-off cost alone (tiny section,
//                                    nothing outside: favours unfair locks,
//                                    whose holder re-takes the lock on its
//                                    own core);
//   cs_ns:200                        a short section: its ceiling is
//                                    1 / 200 ns = 5 M/s minus the lock's own
//                                    cost, so it shows what a lock adds to
//                                    real work;
//   cs_ns:1000                       ~1 us of work while holding: long
//                                    enough that a cross-core hand-off
//                                    (~0.5 us here) no longer dominates;
//   cs_ns:0/think_ns_per_waiter:100  abseil's BM_Contended shape: a tiny
//                                    section and think_ns = 100 * waiters of
//                                    work outside the lock, so the share of
//                                    time each thread wants the lock stays
//                                    constant as threads are added. Ceiling:
//                                    min(cores, waiters) / (100 ns * waiters).
//
// The lessons the curves must show on this lab's 2-core machine: spin locks
// collapse when waiters outnumber cores (a preempted holder or, for
// ticket/MCS, a preempted NEXT waiter stalls every spinner for a time slice);
// park-only pays a system call per hand-off; the ladder
//   FutexMutex(park-only) -> FutexMutex(3-state) -> AdaptiveMutex
// (3-state futex mutex, + adaptive spinning, + parking lot with one awake
// successor) should climb to the JVM's ReentrantLock, and ReentrantLock and
// Semaphore(1), on the same QueuedSynchronizer as AdaptiveMutex, with it.
// Goals: from 4 waiters on, each of AdaptiveMutex, ReentrantLock(unfair) and
// Semaphore(1) >= 1.0x java.ReentrantLock(unfair) and >= 0.9x its own 1-waiter
// throughput, cpu_per_wall <= 1.2, wakes_per_acquire <= 0.01 at cs_ns:0; the
// fair modes >= 2x java.ReentrantLock(fair). Counters per acquire come from
// each lock's LockStats: contended_acquires, spins, parks, wakes, handoffs.
//
// Impl names contain no '/' (it would break the point-name grammar
// `<suite>/<Impl>/waiters:<N>/cs_ns:<v>`); std::mutex starts with "std::" so
// the plots grey it as a baseline. ReentrantLock (both fairness modes) and
// Semaphore(1) complete the JVM's toolbox beside the algorithms. The peers
// are named `<library>.<lock>` (glibc.adaptive, absl.Mutex, tbb.spin_mutex,
// ck.mcs ...) like the JVM driver's `java.<class>`, and `none` is the
// harness without a lock.
//
// Quick mode runs fewer peer points: see QuickCoverage below. The
// critical-section sweep (cs_ns 0 to 5000 at 2 and 16 waiters) is its own
// suite, cs_sweep_bench.cpp, so this file's workloads stay the four above.
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"
#include "benches/local_peers.hpp"
#include "benches/lock_points.hpp"
#include "primitives/adaptive_mutex.hpp"
#include "primitives/backoff_lock.hpp"
#include "primitives/mcs_lock.hpp"
#include "primitives/futex_mutex.hpp"
#include "primitives/reentrant_lock.hpp"
#include "primitives/semaphore.hpp"
#include "primitives/tas_lock.hpp"
#include "primitives/ticket_lock.hpp"
#include "primitives/ttas_lock.hpp"

namespace locklab::bench {
namespace {

// One workload shape; think_ns = think_ns_per_waiter * waiters.
struct Shape {
  std::int64_t cs_ns;
  std::int64_t think_ns_per_waiter;
};
constexpr Shape kShapes[] = {{0, 0}, {200, 0}, {1000, 0}, {0, 100}};

// What --mode=quick leaves out of an implementation's points (full mode
// runs every point of every implementation). Our own locks run everything.
// The peers would double the suite's quick run time (measured on the lab
// machine: 141 s of points with every peer everywhere, 77 s of them ours),
// so in quick mode they run only the tiny sections (cs_ns:0, with and
// without think time: the workloads the lessons at the top are stated on), and
// the FIFO spin peers (ck.ticket, ck.mcs, ck.clh: no backoff, no yield, no
// park) stop at 16 waiters: at 64 each of their points takes 4-6 s to
// drain after its deadline (every hand-off waits for a preempted waiter's
// time slice) to show the collapse their 16-waiter point already shows.
// Together: the peers' points take ~22 s instead of ~64 s.
struct QuickCoverage {
  bool tiny_sections_only = false;
  int max_waiters = std::numeric_limits<int>::max();
};
constexpr QuickCoverage kEverything{};
constexpr QuickCoverage kPeer{.tiny_sections_only = true};
constexpr QuickCoverage kFifoSpinPeer{.tiny_sections_only = true, .max_waiters = 16};

// Registers every point of one implementation; `make` builds a fresh lock
// per point (lock_points.hpp), so a lock lives exactly as long as its point
// (absl's no-detect peer relies on it).
template <class L>
void register_lock(const SuiteOptions& o, const std::string& impl, std::function<std::unique_ptr<L>()> make,
                   QuickCoverage quick = kEverything) {
  for (const Shape& shape : kShapes) {
    for (int waiters : o.waiters) {
      if (o.mode == "quick" && ((quick.tiny_sections_only && shape.cs_ns != 0) || waiters > quick.max_waiters)) continue;
      Workload w{.waiters = waiters,
                 .duration = o.duration,
                 .cs_ns = shape.cs_ns,
                 .think_ns = shape.think_ns_per_waiter * waiters};
      std::vector<Knob> knobs{{"cs_ns", shape.cs_ns}};
      if (shape.think_ns_per_waiter != 0) knobs.push_back({"think_ns_per_waiter", shape.think_ns_per_waiter});
      register_lock_point<L>(o, impl, make, w, knobs);
    }
  }
}

template <class L>
void register_lock(const SuiteOptions& o, const std::string& impl, QuickCoverage quick = kEverything) {
  register_lock<L>(o, impl, [] { return std::make_unique<L>(); }, quick);
}

// Semaphore(1) as a lock, the per-key lock of the ticket-sale semaphore herd
// (docs/case-studies.md#semaphore-herd-at-a-ticket-sale): acquire/release under
// the Lockable names the harness drives.
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

template <class L>
void register_with_policy(const SuiteOptions& o, const std::string& impl, SpinPolicy policy) {
  register_lock<L>(o, impl, [policy] { return std::make_unique<L>(policy); });
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
    bench::register_lock<McsParkingLock>(o, "McsParkingLock");
    bench::register_with_policy<FutexMutex>(o, "FutexMutex(park-only)", SpinPolicy::park_only());
    bench::register_with_policy<FutexMutex>(o, "FutexMutex(3-state)", SpinPolicy::adaptive());
    bench::register_with_policy<AdaptiveMutex>(o, "AdaptiveMutex", SpinPolicy::adaptive());
    bench::register_with_policy<AdaptiveMutex>(o, "AdaptiveMutex(park-only)", SpinPolicy::park_only());
    bench::register_with_policy<AdaptiveMutex>(o, "AdaptiveMutex(spin-only)", SpinPolicy::spin_only());
    bench::register_with_policy<AdaptiveMutex>(o, "AdaptiveMutex(fixed-100)", SpinPolicy::fixed(100));
    // The previous default: newcomers spin before they queue (SpinPolicy::
    // newcomers_spin says what it costs and where it pays). Quick runs take
    // only its tiny sections, where the two policies differ most.
    bench::register_lock<AdaptiveMutex>(
        o, "AdaptiveMutex(newcomers-spin)",
        [] { return std::make_unique<AdaptiveMutex>(SpinPolicy::adaptive().with_newcomers_spinning()); },
        bench::kPeer);
    bench::register_fairness<ReentrantLock>(o, "ReentrantLock(unfair)", Fairness::kUnfair);
    bench::register_fairness<ReentrantLock>(o, "ReentrantLock(fair)", Fairness::kFair);
    bench::register_fairness<bench::SemaphoreLock>(o, "Semaphore(1)", Fairness::kUnfair);
    bench::register_fairness<bench::SemaphoreLock>(o, "Semaphore(1,fair)", Fairness::kFair);
    // Other people's locks (benches/local_peers.hpp), and no lock at all.
    using namespace bench::peers;
    bench::register_lock<NoLock>(o, "none", bench::kPeer);
    bench::register_lock<GlibcAdaptiveMutex>(o, "glibc.adaptive", bench::kPeer);
    bench::register_lock<AbslMutex>(o, "absl.Mutex", bench::kPeer);
    bench::register_lock<AbslMutexNoDeadlockDetection>(o, "absl.Mutex(no-detect)", bench::kPeer);
    bench::register_lock<TbbSpinMutex>(o, "tbb.spin_mutex", bench::kPeer);
    bench::register_lock<TbbQueuingMutex>(o, "tbb.queuing_mutex", bench::kPeer);
    bench::register_lock<CkFasLock>(o, "ck.fas", bench::kPeer);
    bench::register_lock<CkTicketLock>(o, "ck.ticket", bench::kFifoSpinPeer);
    bench::register_lock<CkMcsLock>(o, "ck.mcs", bench::kFifoSpinPeer);
    bench::register_lock<CkClhLock>(o, "ck.clh", bench::kFifoSpinPeer);
  });
}
