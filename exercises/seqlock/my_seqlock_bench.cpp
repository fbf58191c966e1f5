// my_seqlock_bench.cpp — your seqlock on the `rwlocks` suite's read-mostly
// workload, as `my.SeqLock` (exercises/check.sh seqlock --bench writes
// results/exercise_seqlock.json; ./lab plot draws it beside
// StampedLock(optimistic) and the read-write locks).
//
// A write is write_lock(), the section, store() of the next value,
// write_unlock(); a read is read_begin(), the section, load(), validate(),
// retried until it validates (each failed validate() is one optimistic
// retry). Kept in step with benches/rwlocks_bench.cpp by hand (it is not
// ours to change): the same read_permille values and sections.
#include <my_seqlock.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <iterator>
#include <memory>

#include "benches/harness/read_write.hpp"
#include "benches/harness/suite.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {
namespace {

// The harness's adapter: lock()/unlock() are the write side,
// read_optimistically(section) the read side.
class SeqLockForTheHarness {
 public:
  void lock() noexcept { lock_.write_lock(); }
  void unlock() noexcept {
    ++version_;  // under the write lock: a plain member is enough
    lock_.store(Reading{version_, version_, version_, version_});
    lock_.write_unlock();
  }
  template <class F>
  std::int64_t read_optimistically(F&& section) {
    for (std::int64_t retries = 0;; ++retries) {
      const std::uint64_t s = lock_.read_begin();
      section();
      Reading r = lock_.load();
      if (lock_.validate(s)) {
        benchmark::DoNotOptimize(r);
        return retries;
      }
      cpu_relax();
    }
  }

 private:
  MySeqLock lock_;
  std::int64_t version_ = 0;
};

// rwlocks_bench.cpp's points.
constexpr int kReadPermilles[] = {1000, 990, 900, 500};
struct Sections {
  std::int64_t read_cs_ns;
  std::int64_t write_cs_ns;
};
constexpr Sections kQuickSections[] = {{0, 0}};
constexpr Sections kFullSections[] = {{0, 0}, {1000, 1000}};

}  // namespace
}  // namespace locklab::exercises

int main(int argc, char** argv) {
  using namespace locklab;
  using namespace locklab::exercises;
  return bench::suite_main("rwlocks", argc, argv, [](const bench::SuiteOptions& o) {
    const bool full = o.mode != "quick";
    const Sections* begin = full ? std::begin(kFullSections) : std::begin(kQuickSections);
    const Sections* end = full ? std::end(kFullSections) : std::end(kQuickSections);
    for (const Sections* s = begin; s != end; ++s) {
      for (int permille : kReadPermilles) {
        for (int waiters : o.waiters) {
          bench::Workload w{.waiters = waiters, .duration = o.duration, .cs_ns = s->read_cs_ns};
          const bench::ReadWriteMix mix{
              .read_permille = permille, .read_cs_ns = s->read_cs_ns, .write_cs_ns = s->write_cs_ns};
          const std::vector<bench::Knob> knobs{
              {"read_permille", permille}, {"read_cs_ns", s->read_cs_ns}, {"write_cs_ns", s->write_cs_ns}};
          bench::register_point(bench::point_name(o.suite, "my.SeqLock", waiters, knobs), w,
                                [mix](const bench::Workload& wl) {
                                  auto lock = std::make_unique<SeqLockForTheHarness>();
                                  return bench::run_read_write_contention(*lock, wl, mix);
                                });
        }
      }
    }
  });
}
