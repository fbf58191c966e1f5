// partition.cpp — `scenarios partition`: the holder cut off from the lock
// servers by a real partition (partition.hpp), or one "skipped" row saying why.
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
#include "benches/scenarios/partition.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

void run_partition_scenario(const Options& o) {
  partition::PartitionConfig c;
  c.cut = o.cut;
  c.runs = o.runs > 0 ? o.runs : o.sized(3, 10, 1);
  const std::string path = o.out + "/scenario_partition.json";
  const std::string why = partition::partition_unavailable(c.cut);
  if (!why.empty()) {
    // One row that says so: the file is still written (a stale result of
    // another machine must not stand in for this one), the exit status 0.
    std::cout << "\npartition: skipped: " << why << "\n";
    Entry e;
    e.name = "scenario_partition/skipped";
    e.counters = {{"partition_skipped", 1.0}};
    e.label = "skipped: " + why;
    write_json(path, "scenario_partition", o.mode, {e});
    return;
  }
  const std::vector<partition::RunOutcome> runs = partition::run_partition(c);
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < runs.front().locks.size(); ++i) {
    for (std::size_t r = 0; r < runs.size(); ++r) {
      Entry e;
      e.name = "scenario_partition/" + runs[r].locks[i].lock;
      e.family = static_cast<int>(i);
      e.repetitions = static_cast<int>(runs.size());
      e.repetition_index = static_cast<int>(r);
      e.wall_ms = runs[r].wall_ms;
      e.counters = partition::counters(runs[r].locks[i], runs[r], c);
      entries.push_back(e);
    }
  }
  partition::print_table(std::cout, runs, c);
  write_json(path, "scenario_partition", o.mode, entries);
}

}  // namespace locklab::scenarios
