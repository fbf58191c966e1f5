#include "benches/scenarios/scenario_report.hpp"

#include <sys/utsname.h>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "benches/harness/point_process.hpp"

namespace locklab::scenarios {
namespace {

std::string printable(const std::string& s) {
  std::string o = s;
  for (char& ch : o) {
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  }
  return o;
}

std::string compiler_name() {
#if defined(__GNUC__) && !defined(__clang__)
  return std::string("g++ ") + __VERSION__;
#else
  return __VERSION__;
#endif
}

// The context keys that are the same for every file of this process. Google
// Benchmark keeps its custom context for the life of the process and refuses
// a key twice, so they are added once; locklab_suite, which differs per
// file, is put into the context by write_json itself.
void add_process_context(const std::string& mode) {
  static std::once_flag once;
  std::call_once(once, [&] {
    benchmark::BenchmarkReporter::Context::executable_name = "scenarios";
    utsname u{};
    uname(&u);
    const char* rev = std::getenv("LOCKLAB_GIT_REVISION");
    benchmark::AddCustomContext("locklab_mode", mode);
    benchmark::AddCustomContext("cpu_model", bench::first_line_with("/proc/cpuinfo", "model name"));
    benchmark::AddCustomContext("cores", std::to_string(std::thread::hardware_concurrency()));
    benchmark::AddCustomContext("kernel", std::string(u.sysname) + " " + u.release);
    benchmark::AddCustomContext("compiler", compiler_name());
    benchmark::AddCustomContext("git_revision", rev != nullptr && *rev != '\0' ? rev : "unknown");
  });
}

}  // namespace

std::string cell(double v, int precision) {
  if (v < 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

void write_json(const std::string& path, const std::string& suite, const std::string& mode,
                const std::vector<Entry>& entries) {
  add_process_context(mode);
  benchmark::JSONReporter reporter;
  std::ostringstream text, errors;
  reporter.SetOutputStream(&text);
  reporter.SetErrorStream(&errors);
  const benchmark::BenchmarkReporter::Context context;
  reporter.ReportContext(context);
  for (const Entry& e : entries) {
    benchmark::BenchmarkReporter::Run run;
    run.run_name.function_name = printable(e.name);
    run.family_index = e.family;
    run.per_family_instance_index = 0;
    run.run_type = benchmark::BenchmarkReporter::Run::RT_Iteration;
    run.repetitions = e.repetitions;
    run.repetition_index = e.repetition_index;
    run.threads = 1;
    run.iterations = 1;
    run.time_unit = benchmark::kMillisecond;
    const double wall_s = std::isfinite(e.wall_ms) ? e.wall_ms / 1e3 : 0.0;  // Google Benchmark keeps seconds
    run.real_accumulated_time = wall_s;
    run.cpu_accumulated_time = wall_s;
    run.report_label = printable(e.label);
    for (const auto& [k, v] : e.counters) run.counters[k] = benchmark::Counter(std::isfinite(v) ? v : 0.0);
    reporter.ReportRuns({run});
  }
  reporter.Finalize();
  // The per-file key: first in the context, where Google Benchmark's writer
  // opened it.
  std::string json = text.str();
  const std::string open = "\"context\": {\n";
  const auto at = json.find(open);
  if (at == std::string::npos) throw std::runtime_error("Google Benchmark's JSON has no context: cannot write " + path);
  json.insert(at + open.size(), "    \"locklab_suite\": \"" + printable(suite) + "\",\n");
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path);
  out << json;
  if (!out) throw std::runtime_error("cannot write " + path);
  std::cout << "wrote " << path << "\n";
}

}  // namespace locklab::scenarios
