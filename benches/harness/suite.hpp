// suite.hpp — turns contention runs into Google Benchmark entries, so every
// suite writes the one JSON schema of docs/architecture.md and `compare.py` from
// libbenchmark-tools can diff two runs.
//
// Each point is a Google Benchmark with exactly one iteration and manual
// time: the iteration *is* one fixed-duration contention run, and its time is
// the run's wall time. Names follow `<suite>/<Impl>/waiters:<N>[/<knob>:<v>]`;
// Google Benchmark's own suffixes (`/iterations:1/manual_time`) are stripped by
// the reporters below because they are the same for every locklab point.
//
// Command line of every suite binary (besides all --benchmark_* flags):
//   --mode=quick|full     quick (default): waiters 1,2,4,16,64, 200 ms a point,
//                         1 repetition. full: waiters 1..128 in powers of 2,
//                         1 s a point, 5 repetitions interleaved at random
//                         across implementations (so a burst of machine noise
//                         hits every implementation, not just one).
//   --duration_ms=N       override the time per point
//   --waiters=1,2,8       override the waiter counts
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "benches/harness/contention.hpp"

namespace locklab::bench {

struct SuiteOptions {
  std::string suite;
  std::string mode = "quick";
  std::chrono::milliseconds duration{200};
  std::vector<int> waiters{1, 2, 4, 16, 64};
};

// One knob besides the waiter count, named in the benchmark name.
struct Knob {
  std::string name;
  std::int64_t value;
};

// "<suite>/<impl>/waiters:<n>" plus "/<knob>:<v>" for each knob.
std::string point_name(const std::string& suite, const std::string& impl, int waiters,
                       const std::vector<Knob>& knobs = {});

// Registers one point. `measure` builds a fresh object, runs the harness on
// it and returns the result; throwing std::exception marks the point as
// failed in the output (with the message) instead of aborting the suite.
void register_point(const std::string& name, const Workload& workload,
                    std::function<ContentionResult(const Workload&)> measure);

// Writes a result into Google Benchmark's state: manual time = wall time,
// items_per_second, and the counters named in contention.hpp.
void report_to(benchmark::State& state, const ContentionResult& r);

// The main() of every suite binary: parses the flags above, calibrates the
// busy work, records the machine context, calls `register_points`, runs.
int suite_main(const std::string& suite, int argc, char** argv,
               const std::function<void(const SuiteOptions&)>& register_points);

}  // namespace locklab::bench
