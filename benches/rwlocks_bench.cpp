// Suite `rwlocks`: the read-mostly workload. Every waiter mixes reads and
// writes of one object in a fixed proportion (benches/harness/read_write.hpp):
// read_permille 1000, 990, 900 and 500 (100%, 99%, 90% and 50% reads) at
// every waiter count, with the read and write sections' lengths as knobs
// (read_cs_ns, write_cs_ns: 0/0 in quick mode, 0/0 and 1000/1000 in full).
//
// Implementations: ReentrantReadWriteLock (unfair, fair), StampedLock read
// pessimistically and optimistically (one optimistic try, then the read
// lock, Java's idiom); the peers std::shared_mutex, glibc's pthread_rwlock
// preferring readers (its default) and preferring writers
// (nonrecursive), std::mutex for both sides (what a read-write lock must
// beat), and `none` (no lock: the sections alone); the library peers
// absl::Mutex's reader mode (deadlock detector off, see
// read_write_peers.hpp), tbb::spin_rw_mutex and tbb::queuing_rw_mutex.
// The JVM's ReentrantReadWriteLock and StampedLock run the same points in
// benches/jvm (jvm_rwlocks.json).
//
// Quick mode runs the three library peers at 99% reads only (the point the
// goals compare at), to keep the smoke run short; full mode runs every
// implementation at every point.
//
// Counters besides the harness's: reads_per_s, writes_per_s, read_fraction,
// optimistic_retries_per_read (optimistic reads), write_wait_p50_us and
// write_wait_p99_us (the writer's lock() latency), and each of our locks'
// LockStats per operation.
//
// What to expect on a 2-core machine with empty sections: every read-write
// lock's readers write one word (the reader count: a fetch_add in glibc's,
// tbb's spin_rw_mutex and ReentrantReadWriteLock's fast path, a
// compare-exchange in absl's and StampedLock's read lock, an exchange on
// the queue tail in tbb's queuing_rw_mutex), so at short sections they are
// no faster than a mutex; a fair lock stops new readers whenever a writer
// is announced, so with more waiters than cores its readers park behind
// the writer (futex waits and wakes), which costs most at many waiters;
// reader-preferring peers
// starve writers (write_wait_p99_us); optimistic reads write nothing and
// approach `none` while writes are rare.
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "benches/harness/read_write.hpp"
#include "benches/harness/suite.hpp"
#include "benches/lock_points.hpp"
#include "benches/read_write_peers.hpp"
#include "primitives/reentrant_read_write_lock.hpp"

namespace locklab::bench {
namespace {

constexpr int kReadPermilles[] = {1000, 990, 900, 500};

struct Sections {
  std::int64_t read_cs_ns;
  std::int64_t write_cs_ns;
};
constexpr Sections kQuickSections[] = {{0, 0}};
constexpr Sections kFullSections[] = {{0, 0}, {1000, 1000}};

// Which read fractions an implementation runs at.
enum class Reach { kEveryPoint, kQuickAt99 };

template <class L>
void register_rw(const SuiteOptions& o, const std::string& impl, std::function<std::unique_ptr<L>()> make,
                 Reach reach = Reach::kEveryPoint) {
  const bool full = o.mode != "quick";
  const Sections* begin = full ? std::begin(kFullSections) : std::begin(kQuickSections);
  const Sections* end = full ? std::end(kFullSections) : std::end(kQuickSections);
  for (const Sections* s = begin; s != end; ++s) {
    for (int permille : kReadPermilles) {
      if (!full && reach == Reach::kQuickAt99 && permille != 990) continue;
      for (int waiters : o.waiters) {
        // cs_ns carries the read section, so that the harness calibrates
        // the busy work for it (both sections are the same length here).
        Workload w{.waiters = waiters, .duration = o.duration, .cs_ns = s->read_cs_ns};
        const ReadWriteMix mix{.read_permille = permille, .read_cs_ns = s->read_cs_ns, .write_cs_ns = s->write_cs_ns};
        const std::vector<Knob> knobs{
            {"read_permille", permille}, {"read_cs_ns", s->read_cs_ns}, {"write_cs_ns", s->write_cs_ns}};
        register_point(point_name(o.suite, impl, waiters, knobs), w, [make, mix](const Workload& wl) {
          std::unique_ptr<L> lock = make();
          return run_read_write_contention(*lock, wl, mix, lock_events(*lock));
        });
      }
    }
  }
}

template <class L>
void register_rw(const SuiteOptions& o, const std::string& impl, Reach reach = Reach::kEveryPoint) {
  register_rw<L>(o, impl, [] { return std::make_unique<L>(); }, reach);
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab;
  using namespace locklab::bench::peers;
  return bench::suite_main("rwlocks", argc, argv, [](const bench::SuiteOptions& o) {
    bench::register_rw<ReentrantReadWriteLock>(o, "ReentrantReadWriteLock(unfair)",
                                               [] { return std::make_unique<ReentrantReadWriteLock>(Fairness::kUnfair); });
    bench::register_rw<ReentrantReadWriteLock>(o, "ReentrantReadWriteLock(fair)",
                                               [] { return std::make_unique<ReentrantReadWriteLock>(Fairness::kFair); });
    bench::register_rw<StampedPessimistic>(o, "StampedLock(read)");
    bench::register_rw<StampedOptimistic>(o, "StampedLock(optimistic)");
    bench::register_rw<std::shared_mutex>(o, "std::shared_mutex");
    bench::register_rw<PthreadRwlock>(o, "glibc.rwlock(prefer-reader)",
                                      [] { return std::make_unique<PthreadRwlock>(PTHREAD_RWLOCK_PREFER_READER_NP); });
    bench::register_rw<PthreadRwlock>(o, "glibc.rwlock(prefer-writer-nonrecursive)", [] {
      return std::make_unique<PthreadRwlock>(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    });
    bench::register_rw<MutexForBothSides<std::mutex>>(o, "std::mutex");
    bench::register_rw<NoReadWriteLock>(o, "none");
    bench::register_rw<AbslReaderWriterMutex>(o, "absl.Mutex(no-detect)", bench::Reach::kQuickAt99);
    bench::register_rw<TbbSpinRwMutex>(o, "tbb.spin_rw_mutex", bench::Reach::kQuickAt99);
    bench::register_rw<TbbQueuingRwMutex>(o, "tbb.queuing_rw_mutex", bench::Reach::kQuickAt99);
  });
}
