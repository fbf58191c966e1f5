// scenario_report.hpp — how a scenario writes its results: one Entry per
// table row (or per run, as repetitions of one row; or per sample of a time
// series, with a `t:<seconds>` knob), written to <out>/scenario_<name>.json
// by Google Benchmark's own JSONReporter, the writer every suite's file goes
// through (benches/harness/suite.cpp). So the file has the one schema of
// docs/architecture.md, and the plotting module and compare.py read it like
// every suite's.
//
// Guarantees: every entry is one iteration whose real and CPU time are the
// row's wall time in ms; `label` is written only when not empty (a skipped
// row's reason); a counter that is not finite is written as 0 (JSON has no
// NaN, and a row that measured nothing has nothing to say); control
// characters in names and labels become spaces. The context carries
// locklab_suite, locklab_mode, cpu_model, cores, kernel, compiler and
// git_revision ($LOCKLAB_GIT_REVISION, else "unknown") beside Google
// Benchmark's own fields.
//
// Failure: std::runtime_error when the file cannot be written.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace locklab::scenarios {

struct Entry {
  std::string name;
  int family = 0;
  int repetitions = 1;
  int repetition_index = 0;
  double wall_ms = 0;
  std::vector<std::pair<std::string, double>> counters;
  std::string label;  // Google Benchmark's free text ("" none): a skipped row's reason
};

// Writes `entries` to `path` (its directory made if missing) and says so on
// stdout. `suite` is the file's locklab_suite ("scenario_coupon"), `mode`
// quick, full or smoke.
void write_json(const std::string& path, const std::string& suite, const std::string& mode,
                const std::vector<Entry>& entries);

// A table cell: `v` with `precision` decimals, "-" for a negative value (a
// column that does not apply to the row).
std::string cell(double v, int precision = 0);

}  // namespace locklab::scenarios
