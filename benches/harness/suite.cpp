#include "benches/harness/suite.hpp"

#include "benches/harness/point_process.hpp"

#include <sys/utsname.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace locklab::bench {

std::string point_name(const std::string& suite, const std::string& impl, int waiters,
                       const std::vector<Knob>& knobs) {
  std::string name = suite + "/" + impl + "/waiters:" + std::to_string(waiters);
  for (const auto& k : knobs) name += "/" + k.name + ":" + std::to_string(k.value);
  return name;
}

void report_to(benchmark::State& state, const ContentionResult& r) {
  const double ops = static_cast<double>(r.total_ops());
  state.SetIterationTime(r.wall_seconds);
  state.SetItemsProcessed(static_cast<std::int64_t>(r.total_ops()));
  state.counters["ns_per_op"] = r.ns_per_op();
  state.counters["cpu_per_wall"] = r.cpu_per_wall();
  state.counters["fairness"] = r.fairness();
  state.counters["waiters"] = r.workload.waiters;
  state.counters["cs_ns"] = static_cast<double>(r.workload.cs_ns);
  state.counters["think_ns"] = static_cast<double>(r.workload.think_ns);
  for (const auto& [name, delta] : r.event_deltas) {
    state.counters[name + "_per_" + r.per_unit] = ops > 0 ? delta / ops : 0.0;
  }
  for (const auto& [name, value] : r.extra) state.counters[name] = value;
}

void register_point(const std::string& name, const Workload& workload,
                    std::function<ContentionResult(const Workload&)> measure) {
  benchmark::RegisterBenchmark(name.c_str(),
                               [workload, measure](benchmark::State& state) {
                                 // Before the timed loop, so neither clock counts it.
                                 if (BusyWork::counts_iterations(workload.cs_ns) ||
                                     BusyWork::counts_iterations(workload.think_ns)) {
                                   state.counters["busy_work_iterations_per_ns"] = BusyWork::recalibrate();
                                 }
                                 for (auto _ : state) {
                                   try {
                                     report_to(state, measure(workload));
                                   } catch (const std::exception& e) {
                                     state.SkipWithError(e.what());
                                     break;
                                   }
                                 }
                               })
      ->Iterations(1)
      ->UseManualTime()
      ->MeasureProcessCPUTime()
      ->Unit(benchmark::kMillisecond);
}

namespace {

// Google Benchmark appends `/iterations:1/process_time/manual_time` to every
// name; all locklab points share them, so they only break the schema's
// `<suite>/<Impl>/waiters:<N>` names. This reporter clears them and hands the
// runs on to the reporter it wraps (console, JSON or CSV, whichever
// --benchmark_format / --benchmark_out_format chose).
class SchemaNames final : public benchmark::BenchmarkReporter {
 public:
  explicit SchemaNames(benchmark::BenchmarkReporter* inner) : inner_(inner) {}

  bool ReportContext(const Context& context) override {
    // Google Benchmark sets the streams on the reporter it was given (this
    // one) just before this call; the wrapped one must write to them too.
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> renamed = runs;
    for (auto& run : renamed) {
      run.run_name.iterations.clear();
      run.run_name.time_type.clear();
    }
    inner_->ReportRuns(renamed);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  benchmark::BenchmarkReporter* inner_;
};

std::string compiler_name() {
#if defined(__clang__)
  return std::string("clang++ ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

std::string build_flavour() {
  std::string s;
#if defined(NDEBUG)
  s = "release";
#else
  s = "debug";
#endif
#if defined(__SANITIZE_ADDRESS__)
  s += "+asan";
#endif
#if defined(__SANITIZE_THREAD__)
  s += "+tsan";
#endif
  return s;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    int v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc{} || p != item.data() + item.size() || v < 1)
      throw std::invalid_argument(flag + ": expected positive integers separated by commas, got '" + text + "'");
    out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument(flag + ": empty list");
  return out;
}

// If `arg` is "<flag>=<value>", stores the value and returns true.
bool flag_value(const std::string& arg, const std::string& flag, std::string& value) {
  if (arg.rfind(flag + "=", 0) != 0) return false;
  value = arg.substr(flag.size() + 1);
  return true;
}

// Removes locklab's own flags from argv (Google Benchmark rejects unknown
// flags) and returns the options; adds full-mode defaults for repetitions.
SuiteOptions parse_options(const std::string& suite, std::vector<std::string>& args) {
  SuiteOptions o;
  o.suite = suite;
  std::string duration_text, waiters_text;
  bool user_set_repetitions = false;
  std::vector<std::string> rest;
  for (const auto& a : args) {
    std::string mode;
    if (flag_value(a, "--mode", mode)) {
      if (mode != "quick" && mode != "full") throw std::invalid_argument("--mode must be quick or full, got '" + mode + "'");
      o.mode = mode;
    } else if (flag_value(a, "--duration_ms", duration_text) || flag_value(a, "--waiters", waiters_text)) {
      // stored by flag_value
    } else {
      if (a.rfind("--benchmark_repetitions", 0) == 0) user_set_repetitions = true;
      rest.push_back(a);
    }
  }
  if (o.mode == "full") {
    o.duration = std::chrono::milliseconds(1000);
    o.waiters = {1, 2, 4, 8, 16, 32, 64, 128};
    if (!user_set_repetitions) {
      rest.push_back("--benchmark_repetitions=5");
      rest.push_back("--benchmark_enable_random_interleaving=true");
    }
  }
  if (!duration_text.empty()) o.duration = std::chrono::milliseconds(parse_int_list(duration_text, "--duration_ms").at(0));
  if (!waiters_text.empty()) o.waiters = parse_int_list(waiters_text, "--waiters");
  args = rest;
  return o;
}

void add_context(const SuiteOptions& o) {
  utsname u{};
  uname(&u);
  const char* revision = std::getenv("LOCKLAB_GIT_REVISION");
  benchmark::AddCustomContext("locklab_suite", o.suite);
  benchmark::AddCustomContext("locklab_mode", o.mode);
  benchmark::AddCustomContext("duration_ms", std::to_string(o.duration.count()));
  benchmark::AddCustomContext("cpu_model", first_line_with("/proc/cpuinfo", "model name"));
  benchmark::AddCustomContext("cores", std::to_string(std::thread::hardware_concurrency()));
  benchmark::AddCustomContext("kernel", std::string(u.sysname) + " " + u.release);
  benchmark::AddCustomContext("compiler", compiler_name());
  benchmark::AddCustomContext("locklab_build", build_flavour());
  benchmark::AddCustomContext("git_revision", revision != nullptr && *revision != '\0' ? revision : "unknown");
  benchmark::AddCustomContext("busy_work_iterations_per_ns", std::to_string(BusyWork::iterations_per_ns()));
  benchmark::AddCustomContext("busy_work_counted_fixed_ns", std::to_string(BusyWork::counted_fixed_ns()));
  benchmark::AddCustomContext("busy_work_clock_checked_fixed_ns", std::to_string(BusyWork::clock_checked_fixed_ns()));
}

}  // namespace

int suite_main(const std::string& suite, int argc, char** argv,
               const std::function<void(const SuiteOptions&)>& register_points) {
  std::vector<std::string> args(argv, argv + argc);
  SuiteOptions options;
  try {
    options = parse_options(suite, args);
  } catch (const std::invalid_argument& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  int cargc = static_cast<int>(cargs.size());
  cargs.push_back(nullptr);
  benchmark::Initialize(&cargc, cargs.data());
  if (benchmark::ReportUnrecognizedArguments(cargc, cargs.data())) return 2;

  BusyWork::calibrate();
  add_context(options);
  register_points(options);

  // The display reporter follows --benchmark_format (Google Benchmark owns
  // it); the file reporter is JSON, the format every locklab tool reads.
  SchemaNames display(benchmark::CreateDefaultDisplayReporter());
  benchmark::JSONReporter json_file;
  SchemaNames file(&json_file);
  bool to_file = false;
  for (const auto& a : args) to_file = to_file || a.rfind("--benchmark_out=", 0) == 0;
  benchmark::RunSpecifiedBenchmarks(&display, to_file ? &file : nullptr);
  benchmark::Shutdown();
  return 0;
}

}  // namespace locklab::bench
