// failover.cpp — `scenarios failover`: the primary dies before the lock's key
// replicated and Sentinel promotes a replica (failover.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "benches/scenarios/scenario_runs.hpp"
#include "distributed/embedded_server.hpp"
#include "benches/scenarios/failover.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

void run_failover_scenario(const Options& o) {
  using failover::Row;
  const int runs = o.runs > 0 ? o.runs : o.sized(5, 10, 1);
  std::vector<Entry> entries;
  std::cout << "\nfailover: a primary, 2 replicas, 3 Sentinels (down-after 500 ms); A locks on the primary with "
               "replication held back, the primary is killed, B locks on the promoted replica\n\n"
            << std::left << std::setw(18) << "row" << std::right << std::setw(6) << "runs" << std::setw(14)
            << "double grant" << std::setw(10) << "phantom" << std::setw(12) << "A refused" << std::setw(12)
            << "key kept" << std::setw(14) << "equal tokens" << std::setw(16) << "failover ms" << "\n";
  int family = 0;
  for (Row row : failover::all_rows()) {
    const std::string name = failover::row_name(row);
    if (!o.only.empty() && o.only.find("," + name + ",") == std::string::npos) continue;
    int doubles = 0, phantoms = 0, refused = 0, kept = 0, equal = 0, errors = 0;
    std::vector<double> failover_ms;
    for (int run = 0; run < runs; ++run) {
      const failover::RunResult r = failover::run_once(row);
      if (!r.error.empty()) {
        ++errors;
        std::cout << "  " << name << " run " << run + 1 << ": " << r.error << "\n";
      }
      doubles += r.double_grant;
      phantoms += r.phantom;
      refused += r.a_not_replicated;
      kept += r.key_survived;
      equal += r.a_token > 0 && r.a_token == r.b_token;
      failover_ms.push_back(r.failover_ms);
      Entry e;
      e.name = "scenario_failover/" + name;
      e.family = family;
      e.repetitions = runs;
      e.repetition_index = run;
      e.wall_ms = r.wall_ms;
      e.counters = {{"double_grant", r.double_grant},     {"phantom_write", r.phantom},
                    {"a_granted", r.a_granted},           {"a_not_replicated", r.a_not_replicated},
                    {"b_granted", r.b_granted},           {"key_survived", r.key_survived},
                    {"stale_write_rejected", r.stale_rejected}, {"a_token", double(r.a_token)},
                    {"b_token", double(r.b_token)},       {"promoted_was_behind", r.promoted_was_behind},
                    {"failover_ms", r.failover_ms},       {"errors", r.error.empty() ? 0.0 : 1.0}};
      entries.push_back(e);
    }
    ++family;
    std::sort(failover_ms.begin(), failover_ms.end());
    auto of = [&](int n) { return std::to_string(n) + "/" + std::to_string(runs); };
    std::cout << std::left << std::setw(18) << name << std::right << std::setw(6) << runs << std::setw(14)
              << of(doubles) << std::setw(10) << of(phantoms) << std::setw(12) << of(refused) << std::setw(12)
              << of(kept) << std::setw(14) << (row == Row::kFenced ? of(equal) : "-") << std::setw(16)
              << (cell(failover_ms.front()) + ".." + cell(failover_ms.back()))
              << (errors > 0 ? "   errors " + of(errors) : "") << "\n";
  }
  std::cout << "(double grant: A and B both granted within A's 30 s lease; phantom: the resource accepted A's "
               "write after B's grant; A refused: NotReplicated;\n key kept: the promoted replica had A's key; "
               "equal tokens: the new primary issued B the token A holds)\n";
  write_json(o.out + "/scenario_failover.json", "scenario_failover", o.mode, entries);
}

}  // namespace locklab::scenarios
