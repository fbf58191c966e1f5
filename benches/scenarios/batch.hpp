// batch.hpp — MGET vs a GET loop (docs/case-studies.md#mget-vs-a-get-loop) as
// a reusable engine, plus the Redis Cluster rule that comes with it
// (multi-key commands need one hash slot) checked against our own locks'
// keys. Header-only so that benches/scenarios (`scenarios batch`, the table)
// and tests/distributed/batch_scenario_test.cpp (the invariants) run the same
// code.
//
// What the original authors measured
// ----------------------------------
// 1,000 cached keys read over a real network: one GET per key, each waiting
// for its reply, peaked at 1.7-4.0 s; one MGET, a pipeline or a batch call
// took 16-32 ms. Its lesson: the cost is round trips, not Redis. Redis does
// the same 1,000 lookups either way (microseconds each); what differs is how
// often the client stops and waits for the network.
//
// What we scale, and how to read our numbers
// ------------------------------------------
// Part A fetches the same 1,000 keys (100-byte values) from a private
// redis-server on 127.0.0.1 four ways, interleaved round by round so that a
// busy machine slows all four alike:
//   N x GET      1,000 request/reply exchanges         1,000 round trips, not atomic
//   MGET         one command with 1,000 keys            1 round trip, atomic
//   pipeline     1,000 GETs written, then 1,000 replies 1 round trip, not atomic
//                read (Client::pipeline)
//   MULTI/EXEC   MULTI, 1,000 GETs, EXEC, pipelined     1 round trip, atomic
// Round trips are counted (Client::round_trips() before and after a fetch),
// not assumed; the server's commands and CPU per fetch come from INFO,
// outside the timed region. Loopback costs ~20-50 us a round trip, not the
// original milliseconds, so our N x GET takes tens of ms, not seconds; the
// ratio is smaller, the cause the same. There is no delay hook in the client
// layer (and adding one to every command would be a change to the locks'
// client, not to this scenario), so instead of injecting latency we state
// the model and fill it in:
//     time ~= round trips x RTT + (client + server work)
// where RTT is measured (PING, p50) and the work is what remains of the
// measured p50 after the loopback round trips. The table's "model at 1 ms
// RTT" column is that line evaluated at a 1 ms network round trip; the
// original 1.7-4.0 s for 1,000 GETs is the same line at an RTT of 1.7-4 ms.
//
// Why MGET is atomic and a pipeline is not
// ----------------------------------------
// Redis runs one command at a time. MGET is ONE command, so its 1,000 reads
// see one instant: no other client's write lands between two of them.
// A pipeline is only a way of sending: 1,000 separate commands that the
// server runs as it reads them off the socket, and between two reads it
// serves other clients, so another client's MSET can run between GET 412
// and GET 413: the batch is fast, but not a snapshot. MULTI/EXEC makes it
// one again: the GETs are queued and EXEC runs them back to back.
// torn_reads() shows the difference: a writer rewrites all keys with one
// MSET per generation while we fetch, and a fetch holding two generations
// was cut in two (column "mixed"). On loopback a 1,000-GET pipeline (~40 KB)
// is mostly read and run in one go, so it is rarely caught (0-2 in 100-200
// fetches in our runs; 2 of 200 with --keys=20000, ~0.9 MB): a pipeline's
// atomicity is luck of the transport, MGET's and MULTI/EXEC's a guarantee
// (never a mix, in any run). Transactions and pipelines are orthogonal:
// MULTI/EXEC sent without pipelining costs 1,002 round trips and is atomic;
// a pipeline without MULTI costs one and is not.
//
// Part B: Redis Cluster hash slots
// --------------------------------
// A cluster splits the key space into 16,384 slots, slot = CRC16(key) mod
// 16384, and gives each master a share. A multi-key command (MGET, MSET, a
// Lua script's KEYS, a MULTI with several keys) must name keys of ONE slot,
// else the server answers CROSSSLOT, even when both slots live on the same
// node. Hash tags are the way out: if a key contains {...} with something
// inside, only that part is hashed, so user:{1000}:name and
// user:{1000}:email share a slot. Cluster-aware clients split a pipeline or
// MGET by slot (node) and merge the answers (ours does, with
// Client::Options::cluster: cluster_router.hpp); the demo below uses a
// plain client of one node, so its pipeline gets MOVED for every key
// another node owns.
// LocalCluster (distributed/local_cluster.hpp) starts 3 masters on
// loopback (EmbeddedServer with --cluster-enabled: ephemeral ports, own
// temp dirs, no persistence), assigns slots with CLUSTER ADDSLOTSRANGE,
// joins them with CLUSTER MEET and waits (bounded) for cluster_state:ok on
// every node.
//
// Slots are taken from the server (CLUSTER KEYSLOT, pipelined). key_slot()
// below is a hand-written CRC16 kept for two reasons: the lock-key table
// can still be computed when no cluster can be started here (it then says
// so), and a cross-check against CLUSTER KEYSLOT (which is refused by a
// server without cluster support) tests that the rule printed in the essay
// is the rule the server applies.
//
// Our locks' keys: the lock classes derive every key from the lock name
// (`<name>` and, through distributed/lock_keys.hpp, the roles `fence`,
// `queue`, `timeout`, FairLock's per-waiter `alive:<token>` /
// `wake:<token>`: `<name>~<role>` for a name with a hash tag,
// `~{<name>}~<role>` for one without, so that every key of a lock hashes
// to its slot), and several send two or more of them to one script. lock_key_sets() lists, per lock,
// the keys one acquire or release touches together (read from the lock
// objects' accessors; FairLock's per-waiter keys mirror fair_lock.hpp's
// essay, since its scripts build them from the name). Channels are listed
// apart and checked with the keys: on a cluster the release scripts wake
// waiters with sharded SPUBLISH (distributed/publishing_script.hpp), whose
// channel Redis checks like a key of the script, so it must share the
// keys' slot (lock_keys.hpp derives it so).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "benches/harness/redis_lock_registry.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/error.hpp"
#include "distributed/fencing.hpp"
#include "distributed/local_cluster.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/permit_semaphore.hpp"

namespace locklab::scenarios::batch {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using redis::Client;
using redis::Reply;

// ============================================================ part A

enum class Method { kGetEach, kMget, kPipeline, kMultiExec };
inline constexpr Method kMethods[] = {Method::kGetEach, Method::kMget, Method::kPipeline, Method::kMultiExec};

// For the table.
inline const char* method_label(Method m) {
  switch (m) {
    case Method::kGetEach: return "N x GET";
    case Method::kMget: return "MGET";
    case Method::kPipeline: return "pipeline";
    case Method::kMultiExec: return "MULTI/EXEC";
  }
  return "?";
}
// For the JSON row name (no spaces, no '/': the plotting module splits on it).
inline const char* method_id(Method m) {
  switch (m) {
    case Method::kGetEach: return "N_x_GET";
    case Method::kMget: return "MGET";
    case Method::kPipeline: return "pipeline";
    case Method::kMultiExec: return "MULTI_EXEC";
  }
  return "unknown";
}
// One command (MGET) or a transaction sees one instant; see the essay.
inline bool is_atomic(Method m) { return m == Method::kMget || m == Method::kMultiExec; }

struct Config {
  int keys = 1'000;
  int value_bytes = 100;
  int fetches = 20;  // per method, after the warm-up, interleaved across methods
  int warmup = 2;    // per method, not timed (connections, allocator, caches)
  int ping_samples = 200;
  // Fetches per method while a second client rewrites every key (0: skip);
  // untimed, after the timed rounds. See torn_reads().
  int torn_fetches = 10;
  std::string prefix = "locklab:batch:";
};

inline std::vector<std::string> key_names(const Config& c) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<std::size_t>(c.keys));
  for (int i = 0; i < c.keys; ++i) keys.push_back(c.prefix + "item:" + std::to_string(i));
  return keys;
}

// Distinct per key (so a fetch that mixed keys up would be caught), padded
// to value_bytes like a small cached object.
inline std::string value_for(int i, int bytes) {
  std::string v = "cached:" + std::to_string(i) + ":";
  if (static_cast<int>(v.size()) < bytes) v.append(static_cast<std::size_t>(bytes) - v.size(), 'x');
  return v;
}

// One MSET: every key written at one instant.
inline void load(Client& c, const Config& cfg) {
  std::vector<std::string> args = {"MSET"};
  const auto keys = key_names(cfg);
  for (int i = 0; i < cfg.keys; ++i) {
    args.push_back(keys[static_cast<std::size_t>(i)]);
    args.push_back(value_for(i, cfg.value_bytes));
  }
  c.command(args);
}

struct Fetched {
  std::vector<std::optional<std::string>> values;  // nullopt: the key was missing
  std::uint64_t round_trips = 0;
};

namespace detail {
inline std::optional<std::string> value_of(const Reply& r) {
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}
inline const Reply& checked(const Reply& r, const Client& c) {
  if (r.is_error()) throw redis::Error(redis::Error::Kind::kServer, c.options().endpoint() + " replied: " + r.as_string());
  return r;
}
}  // namespace detail

// Fetches `keys` by `m`. Round trips are Client::round_trips() after minus
// before, so `c` must not be used by another thread meanwhile.
inline Fetched fetch(Client& c, Method m, const std::vector<std::string>& keys) {
  Fetched f;
  f.values.reserve(keys.size());
  const std::uint64_t before = c.round_trips();
  switch (m) {
    case Method::kGetEach:
      for (const auto& k : keys) f.values.push_back(detail::value_of(c.command({"GET", k})));
      break;
    case Method::kMget: {
      std::vector<std::string> args;
      args.reserve(keys.size() + 1);
      args.push_back("MGET");
      args.insert(args.end(), keys.begin(), keys.end());
      const Reply reply = c.command(args);  // named: a range-for over a temporary's member dangles
      for (const Reply& r : reply.as_array()) f.values.push_back(detail::value_of(r));
      break;
    }
    case Method::kPipeline: {
      std::vector<std::vector<std::string>> commands;
      commands.reserve(keys.size());
      for (const auto& k : keys) commands.push_back({"GET", k});
      for (const Reply& r : c.pipeline(commands)) f.values.push_back(detail::value_of(detail::checked(r, c)));
      break;
    }
    case Method::kMultiExec: {
      std::vector<std::vector<std::string>> commands;
      commands.reserve(keys.size() + 2);
      commands.push_back({"MULTI"});
      for (const auto& k : keys) commands.push_back({"GET", k});
      commands.push_back({"EXEC"});
      const std::vector<Reply> replies = c.pipeline(commands);
      // MULTI answers OK, each GET QUEUED (or an error that aborts EXEC).
      for (std::size_t i = 0; i + 1 < replies.size(); ++i) detail::checked(replies[i], c);
      const Reply& exec = detail::checked(replies.back(), c);
      if (exec.is_nil()) throw redis::Error(redis::Error::Kind::kProtocol, "EXEC aborted (nil reply)");
      for (const Reply& r : exec.as_array()) f.values.push_back(detail::value_of(r));
      break;
    }
  }
  f.round_trips = c.round_trips() - before;
  return f;
}

// Nearest rank, as coupon.hpp's.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// The server's view: commands run (INFO and the counting itself left out)
// and CPU seconds (user + sys). One round trip, outside any timed region.
struct ServerStats {
  double calls = 0, cpu_s = 0;
};
inline ServerStats server_stats(Client& c) {
  ServerStats s;
  std::istringstream in(c.command({"INFO", "commandstats", "cpu"}).as_string());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cmdstat_", 0) == 0 && line.rfind("cmdstat_info:", 0) != 0) {
      const auto p = line.find("calls=");
      if (p != std::string::npos) s.calls += std::stod(line.substr(p + 6));
    }
    for (const char* k : {"used_cpu_user:", "used_cpu_sys:"}) {
      if (line.rfind(k, 0) == 0) s.cpu_s += std::stod(line.substr(std::string(k).size()));
    }
  }
  return s;
}

struct MethodResult {
  Method method = Method::kGetEach;
  int fetches = 0;
  double p50_ms = 0, p95_ms = 0, min_ms = 0, max_ms = 0;
  double round_trips_per_fetch = 0;    // measured; the same every fetch
  double server_cmds_per_fetch = 0;    // INFO commandstats delta, median
  double server_cpu_us_per_fetch = 0;  // INFO cpu delta, median
  bool atomic = false;
  bool values_ok = true;  // every fetch returned exactly the loaded values
  int torn_fetches = 0;   // fetches made while a writer rewrote the keys ...
  int mixed_fetches = 0;  // ... that returned values of two or more writes
  // p50 + round trips x (rtt - loopback rtt): the model line (essay).
  double modelled_ms(double rtt_ms, double loopback_rtt_ms) const {
    return p50_ms + round_trips_per_fetch * (rtt_ms - loopback_rtt_ms);
  }
};

struct Result {
  int keys = 0;
  int value_bytes = 0;
  double rtt_p50_us = 0;  // PING, loopback
  std::vector<MethodResult> methods;
  double wall_ms = 0;
  const MethodResult& of(Method m) const {
    for (const auto& r : methods) {
      if (r.method == m) return r;
    }
    throw std::out_of_range("no result for that method");
  }
};

// The atomic column, observed. A second client (its own Client, on its
// own thread) rewrites every key with one MSET per generation, value
// "g<generation>:<i>:...": MSET is one command, so at every instant all keys
// carry one generation. Meanwhile `c` fetches `fetches` times by each
// method (the one-round-trip methods kCheapFactor times as often); a fetch
// whose values carry two generations was cut by a write.
// An atomic method can never return a mixed fetch; a non-atomic one shows
// mixes when the writer got in between (N x GET: nearly always; a pipeline:
// only when the server took the writer's MSET between two chunks of it, so
// it may well be 0 on a given run: not caught is not the same as atomic).
// Returns {fetches, mixed} per method in kMethods order. The keys hold
// generation values afterwards.
inline constexpr int kCheapFactor = 20;
inline std::vector<std::pair<int, int>> torn_reads(Client& c, const Config& cfg, int fetches) {
  const auto keys = key_names(cfg);
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> generations{0};
  std::exception_ptr writer_error;
  std::thread writer([&] {
    try {
      Client w(c.options());
      std::vector<std::string> args;
      for (std::int64_t g = 1; !stop.load(); ++g) {
        args.assign(1, "MSET");
        for (std::size_t i = 0; i < keys.size(); ++i) {
          args.push_back(keys[i]);
          // Appended piecewise: GCC 12's -Wrestrict misfires on "g" + string.
          std::string v = "g";
          v += std::to_string(g);
          v += ':';
          v += std::to_string(i);
          v += ':';
          if (static_cast<int>(v.size()) < cfg.value_bytes) v.append(static_cast<std::size_t>(cfg.value_bytes) - v.size(), 'x');
          args.push_back(std::move(v));
        }
        w.command(args);
        generations.store(g);
      }
    } catch (...) {
      writer_error = std::current_exception();
      stop.store(true);
    }
  });
  std::vector<std::pair<int, int>> out(std::size(kMethods), {0, 0});
  try {
    // Bounded: the writer's first MSET or its error, within 10 s.
    const auto deadline = Clock::now() + 10s;
    while (generations.load() == 0 && !stop.load() && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    // The one-round-trip methods are ~100x cheaper than N x GET, and a
    // pipeline is cut only when the writer's MSET lands between two of its
    // chunks: they get kCheapFactor times the fetches.
    for (int round = 0; round < fetches * kCheapFactor && !stop.load(); ++round) {
      for (std::size_t k = 0; k < std::size(kMethods); ++k) {
        if (kMethods[k] == Method::kGetEach && round >= fetches) continue;
        const Fetched f = fetch(c, kMethods[k], keys);
        std::string first;
        bool mixed = false;
        for (const auto& v : f.values) {
          const std::string gen = v ? v->substr(0, v->find(':')) : std::string("(nil)");
          if (first.empty()) first = gen;
          mixed = mixed || gen != first;
        }
        ++out[k].first;
        out[k].second += mixed ? 1 : 0;
      }
    }
  } catch (...) {
    stop.store(true);
    writer.join();
    throw;
  }
  stop.store(true);
  writer.join();
  if (writer_error) std::rethrow_exception(writer_error);
  if (generations.load() == 0) throw std::runtime_error("batch: the writer never completed an MSET");
  return out;
}

// Loads the keys, measures the loopback RTT, then runs `fetches` rounds of
// all four methods (after `warmup` untimed rounds), then torn_reads(). `c`
// is used by this thread only; the keys under cfg.prefix are overwritten.
inline Result run(Client& c, const Config& cfg) {
  if (cfg.keys < 1 || cfg.fetches < 1 || cfg.warmup < 0 || cfg.value_bytes < 1 || cfg.ping_samples < 1) {
    throw std::invalid_argument("batch::run: keys, fetches, value_bytes and ping_samples must be >= 1");
  }
  const auto t0 = Clock::now();
  load(c, cfg);
  const auto keys = key_names(cfg);
  std::vector<std::optional<std::string>> expected;
  for (int i = 0; i < cfg.keys; ++i) expected.emplace_back(value_for(i, cfg.value_bytes));

  Result res;
  res.keys = cfg.keys;
  res.value_bytes = cfg.value_bytes;
  std::vector<double> pings;
  for (int i = 0; i < cfg.ping_samples; ++i) {
    const auto s = Clock::now();
    c.command({"PING"});
    pings.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
  }
  res.rtt_p50_us = percentile(pings, 0.50);

  struct Samples {
    std::vector<double> ms, cmds, cpu_us;
    std::uint64_t round_trips = 0;
    bool first = true, rt_constant = true, values_ok = true;
  };
  std::vector<Samples> samples(std::size(kMethods));
  for (int round = 0; round < cfg.warmup + cfg.fetches; ++round) {
    for (std::size_t k = 0; k < std::size(kMethods); ++k) {
      const Method m = kMethods[k];
      const ServerStats before = server_stats(c);
      const auto s = Clock::now();
      const Fetched f = fetch(c, m, keys);
      const double took = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
      const ServerStats after = server_stats(c);
      Samples& out = samples[k];
      out.values_ok = out.values_ok && f.values == expected;
      if (round < cfg.warmup) continue;
      out.ms.push_back(took);
      out.cmds.push_back(after.calls - before.calls);
      out.cpu_us.push_back((after.cpu_s - before.cpu_s) * 1e6);
      if (!out.first && out.round_trips != f.round_trips) out.rt_constant = false;
      out.round_trips = f.round_trips;
      out.first = false;
    }
  }
  for (std::size_t k = 0; k < std::size(kMethods); ++k) {
    const Samples& s = samples[k];
    if (!s.rt_constant) throw std::logic_error("batch::run: round trips per fetch varied for one method");
    MethodResult r;
    r.method = kMethods[k];
    r.fetches = static_cast<int>(s.ms.size());
    r.p50_ms = percentile(s.ms, 0.50);
    r.p95_ms = percentile(s.ms, 0.95);
    r.min_ms = *std::min_element(s.ms.begin(), s.ms.end());
    r.max_ms = *std::max_element(s.ms.begin(), s.ms.end());
    r.round_trips_per_fetch = static_cast<double>(s.round_trips);
    r.server_cmds_per_fetch = percentile(s.cmds, 0.50);
    r.server_cpu_us_per_fetch = percentile(s.cpu_us, 0.50);
    r.atomic = is_atomic(r.method);
    r.values_ok = s.values_ok;
    res.methods.push_back(r);
  }
  if (cfg.torn_fetches > 0) {
    const auto torn = torn_reads(c, cfg, cfg.torn_fetches);
    for (std::size_t k = 0; k < torn.size(); ++k) {
      res.methods[k].torn_fetches = torn[k].first;
      res.methods[k].mixed_fetches = torn[k].second;
    }
  }
  res.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return res;
}

// ============================================================ part B

// CRC16-CCITT (XMODEM: poly 0x1021, init 0), the checksum Redis Cluster
// hashes keys with; bitwise, since a 256-entry table buys nothing here.
inline std::uint16_t crc16(std::string_view s) {
  std::uint16_t crc = 0;
  for (unsigned char ch : s) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint16_t>(ch) << 8));
    for (int b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

// The part of `key` that is hashed: between the first '{' and the first '}'
// after it, if that is not empty; else the whole key (Redis's rule).
inline std::string_view hashed_part(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

inline int key_slot(std::string_view key) { return crc16(hashed_part(key)) % 16384; }

// Slots per key from the server: CLUSTER KEYSLOT for each, one pipeline.
inline std::vector<int> server_slots(Client& c, const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> commands;
  for (const auto& k : keys) commands.push_back({"CLUSTER", "KEYSLOT", k});
  std::vector<int> slots;
  for (const Reply& r : c.pipeline(commands)) slots.push_back(static_cast<int>(detail::checked(r, c).as_integer()));
  return slots;
}

// The 3-master cluster Part B runs on: distributed/local_cluster.hpp.
using LocalCluster = redis::LocalCluster;

// MGET on a cluster: untagged keys in different slots vs the same keys
// hash-tagged, and a plain pipeline of Part A's keys sent to one node.
struct ClusterDemo {
  std::vector<std::string> untagged, tagged;
  std::vector<int> untagged_slots, tagged_slots;
  std::string untagged_reply;  // the server's answer to MGET untagged...
  bool untagged_crossslot = false;
  std::string tagged_reply;  // ... and to MGET tagged..., on the tag's node
  bool tagged_ok = false;
  int tagged_node = -1;
  int pipeline_keys = 0, pipeline_answered = 0, pipeline_moved = 0;  // GETs sent to node 0
  int crc_checked = 0, crc_mismatches = 0;  // key_slot() vs CLUSTER KEYSLOT
};

// The server's words without the client's "host:port replied: " prefix
// (for a script: "script <name>: <the server's words>").
inline std::string server_text(const redis::Error& e) {
  const std::string s = e.what();
  if (const auto p = s.find(" replied: "); p != std::string::npos) return s.substr(p + 10);
  if (const auto p = s.find(" replied to "); p != std::string::npos) return s.substr(p + 12);
  return s;
}

inline ClusterDemo cluster_demo(LocalCluster& cluster, const std::vector<std::string>& batch_keys) {
  ClusterDemo d;
  d.untagged = {"user:1000:name", "user:1000:email", "user:1000:cart"};
  d.tagged = {"user:{1000}:name", "user:{1000}:email", "user:{1000}:cart"};
  Client c0(cluster.client_options(0));
  d.untagged_slots = server_slots(c0, d.untagged);
  d.tagged_slots = server_slots(c0, d.tagged);
  {
    // Sent to the first key's node: the slot check comes before MOVED, so
    // any node would answer CROSSSLOT.
    Client c(cluster.client_options(cluster.node_for_slot(d.untagged_slots[0])));
    std::vector<std::string> args = {"MGET"};
    args.insert(args.end(), d.untagged.begin(), d.untagged.end());
    try {
      d.untagged_reply = c.command(args).describe();
    } catch (const redis::Error& e) {
      d.untagged_reply = server_text(e);
      d.untagged_crossslot = d.untagged_reply.rfind("CROSSSLOT", 0) == 0;
    }
  }
  {
    d.tagged_node = cluster.node_for_slot(d.tagged_slots[0]);
    Client c(cluster.client_options(d.tagged_node));
    std::vector<std::string> mset = {"MSET"};
    for (const auto& k : d.tagged) {
      mset.push_back(k);
      mset.push_back("v:" + k);
    }
    std::vector<std::string> args = {"MGET"};
    args.insert(args.end(), d.tagged.begin(), d.tagged.end());
    try {
      c.command(mset);
      const Reply r = c.command(args);
      d.tagged_reply = r.describe();
      d.tagged_ok = r.is_array() && r.as_array().size() == d.tagged.size() &&
                    r.as_array()[0].is_string() && r.as_array()[0].as_string() == "v:" + d.tagged[0];
    } catch (const redis::Error& e) {
      d.tagged_reply = server_text(e);
    }
  }
  {
    std::vector<std::vector<std::string>> gets;
    for (const auto& k : batch_keys) gets.push_back({"GET", k});
    d.pipeline_keys = static_cast<int>(gets.size());
    for (const Reply& r : c0.pipeline(gets)) {
      if (r.is_error() && r.as_string().rfind("MOVED", 0) == 0) {
        ++d.pipeline_moved;
      } else {
        ++d.pipeline_answered;
      }
    }
  }
  {
    std::vector<std::string> all = batch_keys;
    all.insert(all.end(), d.untagged.begin(), d.untagged.end());
    all.insert(all.end(), d.tagged.begin(), d.tagged.end());
    const std::vector<int> slots = server_slots(c0, all);
    for (std::size_t i = 0; i < all.size(); ++i) {
      ++d.crc_checked;
      if (key_slot(all[i]) != slots[i]) ++d.crc_mismatches;
    }
  }
  return d;
}

// ------------------------------------------------------------ our locks' keys

struct LockKeySet {
  std::string lock;                   // e.g. "FairLock"
  std::string name;                   // the lock name it was built with
  std::vector<std::string> keys;      // touched together by one script/command
  std::vector<std::string> channels;  // SPUBLISH/SSUBSCRIBE on a cluster: in the keys' slot
  std::string note;
};

// The keys one lock object touches together: its name, its queue (if it
// has one), its fence counter (when fenced, or always for a lock whose
// every script takes it), and the per-waiter keys its scripts build from
// the name (derived keys of role <role><owner token>, lock_keys.hpp, for the
// calling thread's owner token). Channels apart.
template <class L>
LockKeySet key_set_of(const L& l, const bench::RedisLockInfo& info, const std::string& owner) {
  LockKeySet set;
  set.name = l.name();
  set.keys = {l.name()};
  if constexpr (requires { l.queue_key(); }) set.keys.push_back(l.queue_key());
  if (l.fenced() || info.fence_in_every_script) set.keys.push_back(l.fence_key());
  for (std::string_view role : info.per_waiter_keys) set.keys.push_back(redis::derived_key(l.name(), std::string(role) + owner));
  if constexpr (requires { l.channel(); }) set.channels.push_back(l.channel());
  return set;
}

// The keys each lock uses for the lock `name`, read from the lock objects
// (constructing one sends nothing; `c` is only bound, never used): every
// lock of the registry (benches/redis_locks.json), and "<Lock>(fenced)" for
// one whose fence key is a key of its own only when fenced; then the two
// Redis locks outside the registry's surface, PermitSemaphore and RedLock.
inline std::vector<LockKeySet> lock_key_sets(Client& c, const std::string& name) {
  std::vector<LockKeySet> out;
  const std::string owner = c.thread_owner();
  bench::for_each_redis_lock([&]<class L>(const bench::RedisLockInfo& info) {
    for (const bool fenced : {false, true}) {
      if (fenced && info.fence_in_every_script) continue;  // the plain row already has the fence key
      L l(c, name, bench::redis_lock_options<L>({.fenced = fenced}));
      LockKeySet set = key_set_of(l, info, owner);
      set.lock = std::string(info.name) + (fenced ? "(fenced)" : "");
      set.note = std::string(fenced ? info.fenced_keys_note : info.keys_note);
      out.push_back(std::move(set));
    }
  });
  {
    redis::PermitSemaphore l(c, name);
    out.push_back({"PermitSemaphore", name, {l.name(), l.timeout_key()}, {l.channel()}, "scripts: permit count + timeout ZSET"});
  }
  out.push_back({"RedLock", name, {name}, {}, "one key per independent node (not a cluster design)"});
  return out;
}

struct SlotCheck {
  LockKeySet set;
  std::vector<int> slots;        // per key
  std::vector<int> channel_slots;
  int distinct_slots = 0;
  bool same_slot = false;
  bool from_server = false;  // CLUSTER KEYSLOT, else key_slot()
  // Live: one uncontended acquire + release on the node owning the name's
  // slot (1 ok, 0 failed, -1 not tried).
  int live = -1;
  std::string live_detail;
};

inline void fill_slots(SlotCheck& s, Client* cluster_client) {
  if (cluster_client != nullptr) {
    s.slots = server_slots(*cluster_client, s.set.keys);
    s.channel_slots = s.set.channels.empty() ? std::vector<int>{} : server_slots(*cluster_client, s.set.channels);
    s.from_server = true;
  } else {
    for (const auto& k : s.set.keys) s.slots.push_back(key_slot(k));
    for (const auto& k : s.set.channels) s.channel_slots.push_back(key_slot(k));
  }
  std::vector<int> u = s.slots;
  u.insert(u.end(), s.channel_slots.begin(), s.channel_slots.end());  // a sharded channel is checked like a key
  std::sort(u.begin(), u.end());
  s.distinct_slots = static_cast<int>(std::unique(u.begin(), u.end()) - u.begin());
  s.same_slot = s.distinct_slots == 1;
}

// One acquire + release of `lock` (a fresh object) through a client of the
// node owning the name's slot. What a cluster user of our locks would see.
inline std::pair<int, std::string> live_try(LocalCluster& cluster, const LockKeySet& set) {
  if (set.lock == "RedLock") return {-1, "not tried: RedLock wants independent masters, not one cluster"};
  Client c(cluster.client_options(cluster.node_for_slot(key_slot(set.name))));
  const bool fenced = set.lock.find("(fenced)") != std::string::npos;
  auto attempt = [&](auto& lock) -> std::pair<int, std::string> {
    try {
      if (!lock.try_lock_for(200ms)) return {0, "not acquired (held?)"};
      lock.unlock();
      return {1, "acquired and released"};
    } catch (const redis::Error& e) {
      return {0, server_text(e)};
    }
  };
  try {
    // "<Lock>" or "<Lock>(fenced)" of the registry.
    const std::string lock = set.lock.substr(0, set.lock.find('('));
    if (std::ranges::any_of(bench::redis_locks(), [&](const bench::RedisLockInfo& i) { return i.name == lock; })) {
      auto l = bench::make_redis_lock(lock, c, set.name, {.lease = 2s, .fenced = fenced});
      return attempt(*l);
    }
    if (set.lock == "PermitSemaphore") {
      redis::PermitSemaphore s(c, set.name);
      (void)s.try_set_permits(1);
      const auto id = s.try_acquire(200ms, 2s);
      if (!id) return {0, "no permit"};
      s.release(*id);
      return {1, "acquired and released"};
    }
  } catch (const redis::Error& e) {
    return {0, server_text(e)};
  }
  return {-1, "not tried"};
}

// The lock-key table for `name` (and whatever other names the caller
// passes): slots from the cluster if there is one, else key_slot().
inline std::vector<SlotCheck> check_lock_keys(LocalCluster* cluster, Client& binder, const std::vector<std::string>& names) {
  std::unique_ptr<Client> c0;
  if (cluster != nullptr) c0 = std::make_unique<Client>(cluster->client_options(0));
  std::vector<SlotCheck> out;
  for (const auto& name : names) {
    for (auto& set : lock_key_sets(binder, name)) {
      SlotCheck s;
      s.set = std::move(set);
      fill_slots(s, c0.get());
      if (cluster != nullptr) std::tie(s.live, s.live_detail) = live_try(*cluster, s.set);
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace locklab::scenarios::batch
