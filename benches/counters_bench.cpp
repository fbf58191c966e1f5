// Suite `counters`: the four counters of primitives/counter.hpp on the shared
// contention harness. Every waiter increments one shared counter in a loop.
//
// Goals (measured, never asserted in tests): on a 2-core machine
// StripedCounter reaches >= 500 M increments/s at 2+ waiters, i.e. >= 4x
// FetchAddCounter and >= 5x CasLoopCounter at 64 waiters. Memory goal:
// StripedCounter stays at one cache line until contended, then one line per
// hardware thread (see striped_counter.hpp).
//
// Each point also checks the counter's final value against the operations the
// harness counted, so a broken counter fails the benchmark instead of
// producing a fast, wrong curve.
//
// The read side (`counters/<Impl>/waiters:<N>/readers:1`), as perfbook's
// count/ measures it: N writers increment as above while one more thread
// calls get() in a loop (benches/harness/read_side.hpp). items_per_second is
// still the writers' increments per second; the reader adds
//   reads_per_second   get() calls per wall second (what a reader gets on a
//                      machine shared with N writers);
//   ns_per_read        the reader's own CPU nanoseconds per get() (what one
//                      read costs while it runs);
//   cells_per_read     the words get() adds up: 1 for the single-word
//                      counters, base + every allocated cell for
//                      StripedCounter (its read is O(stripes)).
// Each of these points also checks that the reader never saw the value go
// backwards (increments only: every get() must be monotonic for one reader).
#include <stdexcept>
#include <string>

#include "benches/harness/read_side.hpp"
#include "benches/harness/suite.hpp"
#include "primitives/cas_loop_counter.hpp"
#include "primitives/counter.hpp"
#include "primitives/fetch_add_counter.hpp"
#include "primitives/mutex_counter.hpp"
#include "primitives/striped_counter.hpp"

namespace locklab::bench {
namespace {

template <Counter C>
EventSource events_of(const C& counter) {
  if constexpr (requires { counter.failures(); }) {
    return [&counter] { return EventCounts{{"cas_failures", static_cast<double>(counter.failures())}}; };
  } else {
    return {};
  }
}

template <Counter C>
void check_total(const C& counter, const ContentionResult& r) {
  if (counter.get() != static_cast<std::int64_t>(r.total_ops())) {
    throw std::runtime_error("counter lost updates: value " + std::to_string(counter.get()) + " after " +
                             std::to_string(r.total_ops()) + " increments");
  }
}

template <Counter C>
ContentionResult measure_counter(const Workload& w) {
  C counter;
  ContentionResult r = run_contention(w, [&counter](int) { counter.increment(); }, events_of(counter));
  check_total(counter, r);
  return r;
}

// The words get() loads and adds: StripedCounter visits base and every cell
// it has allocated (cells are allocated per 16 thread slots in use).
template <Counter C>
double cells_per_read(const C& counter) {
  if constexpr (requires { counter.cell_count(); }) {
    return 1.0 + counter.cell_count();
  } else {
    return 1.0;
  }
}

template <Counter C>
ContentionResult measure_reads(const Workload& w) {
  C counter;
  std::int64_t last_seen = 0;
  bool went_backwards = false;
  auto [r, side] = run_with_reader(
      w, [&counter](int) { counter.increment(); },
      [&counter, &last_seen, &went_backwards] {
        const std::int64_t v = counter.get();
        went_backwards = went_backwards || v < last_seen;
        last_seen = v;
      },
      events_of(counter));
  check_total(counter, r);
  if (went_backwards) throw std::runtime_error("a reader saw the counter go backwards under increments only");
  r.extra.emplace_back("reads_per_second", side.reads_per_second());
  r.extra.emplace_back("ns_per_read", side.cpu_ns_per_read());
  r.extra.emplace_back("cells_per_read", cells_per_read(counter));
  return r;
}

template <Counter C>
void register_counter(const SuiteOptions& o, const std::string& impl) {
  for (int waiters : o.waiters) {
    Workload w{.waiters = waiters, .duration = o.duration};
    register_point(point_name(o.suite, impl, waiters), w, measure_counter<C>);
  }
}

// The read side: waiters = writers, plus one reader. Quick mode keeps it to
// a fraction of the suite's time: half-length points (a read costs
// nanoseconds, so a point still holds millions of them) and no 4-writer point
// (the same one segment of StripedCounter cells as 2 and 16 writers).
template <Counter C>
void register_reads(const SuiteOptions& o, const std::string& impl) {
  const bool quick = o.mode == "quick";
  for (int writers : o.waiters) {
    if (quick && writers == 4) continue;
    Workload w{.waiters = writers, .duration = quick ? o.duration / 2 : o.duration};
    register_point(point_name(o.suite, impl, writers, {{"readers", 1}}), w, measure_reads<C>);
  }
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab;
  return bench::suite_main("counters", argc, argv, [](const bench::SuiteOptions& o) {
    bench::register_counter<FetchAddCounter>(o, "FetchAddCounter");
    bench::register_counter<CasLoopCounter>(o, "CasLoopCounter");
    bench::register_counter<MutexCounter>(o, "MutexCounter");
    bench::register_counter<StripedCounter>(o, "StripedCounter");
    bench::register_reads<FetchAddCounter>(o, "FetchAddCounter");
    bench::register_reads<CasLoopCounter>(o, "CasLoopCounter");
    bench::register_reads<MutexCounter>(o, "MutexCounter");
    bench::register_reads<StripedCounter>(o, "StripedCounter");
  });
}
