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
#include <string>

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
ContentionResult measure_counter(const Workload& w) {
  C counter;
  ContentionResult r = run_contention(w, [&counter](int) { counter.increment(); }, events_of(counter));
  if (counter.get() != static_cast<std::int64_t>(r.total_ops())) {
    throw std::runtime_error("counter lost updates: value " + std::to_string(counter.get()) + " after " +
                             std::to_string(r.total_ops()) + " increments");
  }
  return r;
}

template <Counter C>
void register_counter(const SuiteOptions& o, const std::string& impl) {
  for (int waiters : o.waiters) {
    Workload w{.waiters = waiters, .duration = o.duration};
    register_point(point_name(o.suite, impl, waiters), w, measure_counter<C>);
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
  });
}
