// batch.cpp — `scenarios batch`: MGET vs a GET loop, then CROSSSLOT vs hash
// tags on a local Redis Cluster and each lock's key slots (batch.hpp).
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
#include "benches/scenarios/batch.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;

namespace {

std::string slot_list(const batch::SlotCheck& c) {
  // Keys shown relative to the lock name, tokens elided: they are long and
  // only their slot matters here.
  std::string out;
  for (std::size_t i = 0; i < c.set.keys.size(); ++i) {
    std::string k = c.set.keys[i];
    const std::string prefix = redis::derived_key_prefix(c.set.name);
    if (k == c.set.name) k = "<name>";
    if (k.rfind(prefix, 0) == 0) k = "~" + k.substr(prefix.size());
    for (const char* part : {"~alive:", "~wake:"}) {
      if (k.rfind(part, 0) == 0) k = std::string(part) + "<t>";
    }
    out += (out.empty() ? "" : " ") + k + "=" + std::to_string(c.slots[i]);
  }
  return out;
}

}  // namespace

void run_batch_scenario(const Options& o) {
  batch::Config cfg;
  cfg.keys = o.keys > 0 ? o.keys : 1'000;
  cfg.fetches = o.runs > 0 ? o.runs : o.sized(20, 100, 5);
  cfg.torn_fetches = o.sized(5, 20, 2);
  redis::EmbeddedServer server;
  redis::Client client(server.client_options());
  // Part B's cluster is started first and left to settle while part A
  // runs (a fresh master waits 2 s before it calls itself writable). If
  // it cannot start, part B is skipped, not failed; the JSON's cluster row
  // says which.
  std::unique_ptr<batch::LocalCluster> cluster;
  std::string why_not;
  try {
    cluster = std::make_unique<batch::LocalCluster>(3, 10s, false);
  } catch (const std::exception& e) {
    why_not = e.what();
  }
  const batch::Result r = batch::run(client, cfg);
  std::vector<Entry> entries;
  int family = 0;
  const double loopback_ms = r.rtt_p50_us / 1e3;
  std::cout << "\nbatch: " << r.keys << " keys (" << r.value_bytes << "-byte values) fetched " << cfg.fetches
            << " times by each method, interleaved; loopback RTT p50 " << cell(r.rtt_p50_us) << " us (PING)\n"
            << "(MGET vs a GET loop case study, over a network: N x GET 1.7-4.0 s; MGET / pipeline / batch "
               "16-32 ms)\n\n"
            << std::left << std::setw(12) << "method" << std::right << std::setw(13) << "round trips" << std::setw(8)
            << "atomic" << std::setw(10) << "p50 ms" << std::setw(10) << "p95 ms" << std::setw(13) << "server cmds"
            << std::setw(15) << "server cpu us" << std::setw(18) << "model@1ms RTT ms" << std::setw(8) << "values"
            << std::setw(8) << "mixed" << "\n";
  for (const auto& m : r.methods) {
    const double model = m.modelled_ms(1.0, loopback_ms);
    std::cout << std::left << std::setw(12) << batch::method_label(m.method) << std::right << std::setw(13)
              << cell(m.round_trips_per_fetch) << std::setw(8) << (m.atomic ? "yes" : "no") << std::setw(10)
              << cell(m.p50_ms, 2) << std::setw(10) << cell(m.p95_ms, 2) << std::setw(13)
              << cell(m.server_cmds_per_fetch) << std::setw(15) << cell(m.server_cpu_us_per_fetch) << std::setw(18)
              << cell(model, 1) << std::setw(8) << (m.values_ok ? "ok" : "WRONG") << std::setw(8)
              << (std::to_string(m.mixed_fetches) + "/" + std::to_string(m.torn_fetches)) << "\n";
    Entry e;
    e.name = std::string("scenario_batch/") + batch::method_id(m.method);
    e.family = family++;
    e.wall_ms = m.p50_ms;
    e.counters = {{"p50_ms", m.p50_ms},
                  {"round_trips_per_fetch", m.round_trips_per_fetch},
                  {"modelled_ms_at_1ms_rtt", model},
                  {"atomic", m.atomic ? 1.0 : 0.0},
                  {"p95_ms", m.p95_ms},
                  {"min_ms", m.min_ms},
                  {"max_ms", m.max_ms},
                  {"server_cmds_per_fetch", m.server_cmds_per_fetch},
                  {"server_cpu_us_per_fetch", m.server_cpu_us_per_fetch},
                  {"loopback_rtt_us", r.rtt_p50_us},
                  {"keys", double(r.keys)},
                  {"fetches", double(m.fetches)},
                  {"values_ok", m.values_ok ? 1.0 : 0.0},
                  {"mixed_fetches", double(m.mixed_fetches)},
                  {"fetches_under_writes", double(m.torn_fetches)}};
    entries.push_back(e);
  }
  const auto& each = r.of(batch::Method::kGetEach);
  const auto& mget = r.of(batch::Method::kMget);
  std::cout << "mixed: fetches (of those made while another client rewrote every key with one MSET per round) "
               "that returned values of two rounds; 0 for a non-atomic method means not caught this time\n"
               "(a 1,000-GET pipeline is mostly read and run by the server in one go: cut rarely, but cut)\n";
  std::cout << "N x GET / MGET at p50: " << cell(each.p50_ms / mget.p50_ms, 1) << "x here; model at 1 ms RTT: "
            << cell(each.modelled_ms(1.0, loopback_ms) / mget.modelled_ms(1.0, loopback_ms), 0)
            << "x (time ~= round trips x RTT + client and server work; the case study's 1.7-4.0 s for 1,000 GETs is an "
               "RTT of 1.7-4 ms)\n";

  if (cluster) {
    try {
      cluster->wait_until_ok(10s);
    } catch (const std::exception& e) {
      why_not = e.what();
      cluster.reset();
    }
  }
  Entry ce;
  ce.name = "scenario_batch/cluster";
  ce.family = family++;
  const std::vector<std::string> names = {"orders:42", "{orders:42}"};
  std::vector<batch::SlotCheck> checks;
  if (cluster) {
    const batch::ClusterDemo d = batch::cluster_demo(*cluster, batch::key_names(cfg));
    std::cout << "\ncluster: 3 masters on 127.0.0.1 (ports " << cluster->port(0) << ", " << cluster->port(1) << ", "
              << cluster->port(2) << "; slots 0-5460 / 5461-10922 / 10923-16383), cluster_state:ok "
              << cell(cluster->ready_ms()) << " ms after its start (started before part A)\n";
    auto slots = [](const std::vector<int>& v) {
      std::string s;
      for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
      return s;
    };
    std::string keys;
    for (const auto& k : d.untagged) keys += " " + k;
    std::cout << "  MGET" << keys << "  (slots " << slots(d.untagged_slots) << ")\n    -> " << d.untagged_reply << "\n";
    keys.clear();
    for (const auto& k : d.tagged) keys += " " + k;
    std::cout << "  MGET" << keys << "  (slots " << slots(d.tagged_slots) << ", node " << d.tagged_node << ")\n    -> "
              << (d.tagged_ok ? "ok: " : "FAILED: ") << d.tagged_reply << "\n"
              << "  pipeline of " << d.pipeline_keys << " GETs (part A's keys) sent to node 0: " << d.pipeline_answered
              << " answered, " << d.pipeline_moved
              << " MOVED (a cluster-aware client groups a batch by node and merges the replies)\n"
              << "  slot = CRC16(key or its {tag}) mod 16384: key_slot() here vs CLUSTER KEYSLOT on " << d.crc_checked
              << " keys: " << d.crc_mismatches << " mismatches\n";
    ce.wall_ms = cluster->ready_ms();
    ce.counters = {{"cluster_started", 1},
                   {"crossslot_untagged", d.untagged_crossslot ? 1.0 : 0.0},
                   {"tagged_mget_ok", d.tagged_ok ? 1.0 : 0.0},
                   {"pipeline_moved", double(d.pipeline_moved)},
                   {"pipeline_answered", double(d.pipeline_answered)},
                   {"crc16_checked", double(d.crc_checked)},
                   {"crc16_mismatches", double(d.crc_mismatches)},
                   {"cluster_ready_ms", cluster->ready_ms()}};
    redis::Client binder(cluster->client_options(0));
    checks = batch::check_lock_keys(cluster.get(), binder, names);
  } else {
    std::cout << "\ncluster: skipped, a local Redis Cluster did not start here: " << why_not
              << "\n(the lock-key slots below come from this program's CRC16, not from a cluster)\n";
    ce.counters = {{"cluster_started", 0}};
    checks = batch::check_lock_keys(nullptr, client, names);
  }
  entries.push_back(ce);

  std::cout << "\nour locks' keys for one lock name, as slots (keys one script or command touches together; "
               "<t> = a waiter's token):\n"
            << std::left << std::setw(22) << "lock" << std::setw(13) << "name" << std::right << std::setw(6) << "slots"
            << std::setw(6) << "one?" << "  " << std::left << std::setw(62) << "keys=slot"
            << (cluster ? "acquire+release on the cluster" : "") << "\n";
  std::vector<std::string> split;
  for (const auto& c : checks) {
    std::cout << std::left << std::setw(22) << c.set.lock << std::setw(13) << c.set.name << std::right << std::setw(6)
              << c.distinct_slots << std::setw(6) << (c.same_slot ? "yes" : "NO") << "  " << std::left << std::setw(61)
              << slot_list(c) << " " << (c.live < 0 && !cluster ? "" : c.live_detail) << "\n";
    if (!c.same_slot) split.push_back(c.set.lock);
    Entry e;
    e.name = "scenario_batch/" + c.set.lock + "[" + c.set.name + "]";
    e.family = family++;
    e.counters = {{"distinct_slots", double(c.distinct_slots)},
                  {"same_slot", c.same_slot ? 1.0 : 0.0},
                  {"keys", double(c.set.keys.size())},
                  {"live_ok", double(c.live)},
                  {"slots_from_server", c.from_server ? 1.0 : 0.0}};
    entries.push_back(e);
  }
  std::cout << "(channels: <name>~channel, derived like the keys and counted in their slots: a cluster client's scripts publish "
               "sharded, SPUBLISH, whose channel must share the script's slot)\n";
  if (!split.empty()) {
    std::string list;
    for (const auto& l : split) list += (list.empty() ? "" : ", ") + l;
    std::cout << "finding: with an untagged name these spread their keys over several slots, so their scripts "
                 "get CROSSSLOT on a Redis Cluster: "
              << list << "; a {hash tag} name (e.g. {orders:42}) puts every key of a lock in one slot\n";
  }
  write_json(o.out + "/scenario_batch.json", "scenario_batch", o.mode, entries);
}

}  // namespace locklab::scenarios
