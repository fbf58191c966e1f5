// scenario_runs.hpp — the runners of the `scenarios` subcommands, one .cpp
// beside its engine's header each (coupon.cpp runs coupon and faults over
// coupon.hpp, herd.cpp holds the herd engine and its runner, partition.cpp,
// failover.cpp, stock.cpp, vus_table.cpp, batch.cpp, load_test.cpp,
// pool_rejection.cpp, token_sources.cpp). A runner runs its experiment at the
// sizes `Options` asks for, prints its table beside the case study's and
// writes <out>/scenario_<name>.json (scenario_report.hpp). They make up the
// static library locklab::scenarios; scenarios.cpp is only the command line.
//
// Failures: a runner throws std::exception (a server that does not start, a
// child role that fails); the command line turns it into exit status 1.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

#include "benches/scenarios/scenario_options.hpp"
#include "benches/scenarios/scenario_report.hpp"

namespace locklab::scenarios {

using Args = std::map<std::string, std::string>;  // as coupon.hpp's: a child role's arguments
using Clock = std::chrono::steady_clock;          // as the engines'
using ms = std::chrono::milliseconds;

// Starts this executable again as child role `role` ("client", "victim",
// "herd") with `args` (distributed/child_process.hpp); its pid, or -1. The
// role's main is picked by scenarios.cpp's main from --role=.
pid_t spawn_role(const std::string& role, const Args& args);

// The child role "herd" (herd.cpp): N threads on one PermitSemaphore key.
int herd_main(const Args& args);

void run_coupon_scenario(const Options& o);
void run_faults_scenario(const Options& o);
void run_partition_scenario(const Options& o);
void run_herd_scenario(const Options& o);
void run_stock_scenario(const Options& o);
void run_vus_scenario(const Options& o);
void run_batch_scenario(const Options& o);
void run_load_test_scenario(const Options& o);
void run_pool_rejection_scenario(const Options& o);
void run_token_sources_scenario(const Options& o);
void run_failover_scenario(const Options& o);

}  // namespace locklab::scenarios
