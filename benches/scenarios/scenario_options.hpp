// scenario_options.hpp — what the `scenarios` command line asked for, as the
// runners (coupon.cpp, herd.cpp, ...) read it. scenarios.cpp parses it
// (every flag checked there: a bad flag is exit status 2 and nothing
// written); a runner only reads it. Its enum fields are filled by the
// parser, so this header needs no engine's header.
#pragma once

#include <string>
#include <vector>

namespace locklab::scenarios {

enum class Resource;  // coupon.hpp
namespace partition {
enum class Cut;  // partition.hpp
}

struct Options {
  std::string command;
  std::string mode = "quick";
  std::string out;
  bool processes_flag = false;  // coupon --processes
  int runs = 0;                 // 0: the mode's default
  int herd_processes = 2;
  std::vector<int> waiters;
  int duration_ms = 0;
  std::string only;              // faults --only=drift,pause: just these rows
  partition::Cut cut{};          // partition --cut=iptables|link (the parser's default: iptables)
  std::vector<Resource> resources;  // coupon, faults: --resource (the parser's default: both)
  int gap_us = 0;                // stock: a pause between read and write (0: none)
  std::vector<int> vus;          // vus_table: 1,5,50 unless given
  int requests = 0;              // vus_table: 0: the mode's default
  int think_us = -1;             // vus_table: -1: VusConfig's default
  int keys = 0;                  // batch --keys=K (0: 1,000)
  double time_scale = 0;         // load_test / pool_rejection: 0 = the mode's default

  // One knob's size in this mode. smoke (`./lab test`): the least work that
  // still writes every row and column of each file, so that every notebook
  // cell has data to run on; its figures are for checking, not for reading.
  template <class T>
  T sized(T quick, T full, T smoke) const {
    return mode == "full" ? full : mode == "smoke" ? smoke : quick;
  }
};

}  // namespace locklab::scenarios
