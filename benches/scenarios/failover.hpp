// failover.hpp — the fault that breaks real Redis locks: the primary dies
// before the lock's key reached a replica, Sentinel promotes a replica, and
// a second client is granted the same lock while the first still holds it.
// Header-only so that `scenarios failover` (the table) and
// tests/distributed/failover_scenario_test.cpp (its invariants) run the
// same code.
//
// One run, on a fresh EmbeddedReplicaSet (a primary, 2 replicas, 3
// Sentinels on 127.0.0.1):
//   0. a first holder W takes the lock, writes the resource and releases;
//      WAIT 2 makes sure all of that (and, fenced, token 1) replicated;
//   1. replication is held back: each chosen replica is stopped (SIGSTOP)
//      and its link is cut on the primary (CLIENT KILL ADDR <its side of the
//      link>), so the primary has nobody to send the next write to;
//   2. client A (through Sentinel) takes the lock: SET NX PX 30 s (fenced:
//      the INCR of the token counter too) — on the primary only;
//   3. the primary is killed (SIGKILL) at once, the replicas resumed;
//      Sentinel notices (down-after 500 ms), agrees and promotes one;
//   4. client B (through Sentinel, built before the fault: its Client
//      follows the failover) takes the same lock on the new primary;
//   5. A, which still believes it holds the lock (30 s lease, a few seconds
//      gone), writes the resource late: the stale holder's write.
// A double grant: A and B both granted, A's lease still running. A phantom
// write: the resource accepted A's stale write after B was granted.
//
// Why the link is cut, not just the replica stopped: a stopped replica (or
// one in DEBUG SLEEP) still has a socket, and the kernel buffers what the
// primary sends into it; the primary's write is on its way before it dies,
// and the replica applies it when resumed (the `stop-only` row measures
// this). Cutting the link leaves the write nowhere but in the dying
// primary's memory; the stop keeps the replica from reconnecting (it would
// retry within its 1 s replication cron) before the kill.
//
// Rows (the same fault unless said):
//   plain              no WAIT, no token: the lock's key is lost with the
//                      primary, B is granted: a double grant, and A's late
//                      write is accepted (a phantom);
//   wait1              Client::Options::wait_replicas = 1: A's WAIT sees no
//                      replica, A's acquire is released and refused
//                      (NotReplicated): no double grant, at the price of
//                      refusing the lock while replication is down;
//   wait1-one-behind   wait_replicas = 1 with ONE replica cut off: WAIT is
//                      satisfied by the other, so A is granted; whether
//                      B is too depends on which replica Sentinel promotes
//                      (the one that acknowledged, or the one behind):
//                      in the lab's runs it promoted the one that
//                      acknowledged (the larger replication offset);
//   wait1-acker-lost   as wait1-one-behind, and the replica that
//                      acknowledged dies with the primary (one rack, one
//                      power supply): WAIT 1 survives one failure, not two;
//                      Sentinel promotes the replica that never had the key.
//                      WAIT narrows the window, it does not close it;
//   fenced             as plain, with fencing tokens and the resource
//                      checking them (LocalFencedResource: the resource
//                      lives outside Redis, as a fenced resource must).
//                      The token counter replicates like the key: A's INCR
//                      was lost too, so the new primary issues B the SAME
//                      token number A holds. The resource's rule is strict
//                      (an equal token is refused), so whichever of the two
//                      writes second is refused: B wrote first here, A's
//                      stale write is refused, no phantom;
//   stop-only          as plain, but replicas only stopped, no link cut.
//
// Costs: about 2-3 s to start a replica set (Sentinels find each other over
// the primary's hello channel every 2 s) and about 2 s per failover (1.9-5.4
// s measured on a 2-core VM under a parallel build): 4-5 s a run.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "distributed/embedded_replica_set.hpp"
#include "distributed/fenced_resource.hpp"
#include "distributed/not_replicated.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::scenarios::failover {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

enum class Row { kPlain, kWait1, kWait1OneBehind, kWait1AckerLost, kFenced, kStopOnly };

inline const char* row_name(Row r) {
  switch (r) {
    case Row::kPlain: return "plain";
    case Row::kWait1: return "wait1";
    case Row::kWait1OneBehind: return "wait1-one-behind";
    case Row::kWait1AckerLost: return "wait1-acker-lost";
    case Row::kFenced: return "fenced";
    case Row::kStopOnly: return "stop-only";
  }
  return "?";
}

inline const std::vector<Row>& all_rows() {
  static const std::vector<Row> rows = {Row::kPlain,           Row::kWait1,  Row::kWait1OneBehind,
                                        Row::kWait1AckerLost, Row::kFenced, Row::kStopOnly};
  return rows;
}

struct RunResult {
  bool a_granted = false;         // A's acquire returned true
  bool a_not_replicated = false;  // A's acquire was refused with NotReplicated
  bool key_survived = false;      // the promoted replica had A's key
  bool b_granted = false;         // B acquired on the new primary
  bool double_grant = false;      // A and B both granted, A's lease still running
  bool phantom = false;           // the resource accepted A's write after B's grant
  bool stale_rejected = false;    // the resource refused A's stale write (fenced)
  std::int64_t a_token = 0, b_token = 0;  // fenced: the tokens A and B got
  int promoted = -1;                      // the node Sentinel promoted
  bool promoted_was_behind = false;       // wait1-one-behind / -acker-lost: it promoted the cut-off replica
  double failover_ms = 0;                 // primary killed -> new primary answers role:master
  double wall_ms = 0;
  std::string error;  // a step that failed unexpectedly (the run then counts nothing)
};

namespace detail {

// The "laddr=ip:port" of a replica's link to its primary, as the replica
// sees it: on the primary, that connection's "addr".
inline std::string link_address(redis::Client& replica) {
  const std::string list = replica.command({"CLIENT", "LIST", "TYPE", "master"}).as_string();
  const auto at = list.find("laddr=");
  if (at == std::string::npos) throw std::runtime_error("replica has no link to a primary: " + list);
  return list.substr(at + 6, list.find(' ', at) - at - 6);
}

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace detail

// One run of `row` (see the essay). Never throws for a fault the run
// injects; an unexpected failure is reported in RunResult::error.
inline RunResult run_once(Row row) {
  using namespace locklab::redis;
  RunResult r;
  const auto start = Clock::now();
  const std::string name = "failover:lock";
  constexpr auto kLease = 30s;  // outlives any failover here by far: A never stops believing it holds
  const bool fenced = row == Row::kFenced;
  std::vector<int> stopped;
  EmbeddedReplicaSet set;
  try {
    // 0. A first holder, everything replicated: token 1 and the resource's
    //    first write are on every node.
    LocalFencedResource resource;
    {
      Client w(set.node_options(0));
      SpinLock lock(w, name, SpinLock::Options{.lease = kLease, .fenced = fenced});
      if (!lock.try_lock()) throw std::runtime_error("the first holder did not get the lock");
      if (fenced) resource.write(lock.token(), "W");
      lock.unlock();
      if (w.pipeline({{"SET", "failover:sync", "1"}, {"WAIT", "2", "5000"}})[1].as_integer() != 2) {
        throw std::runtime_error("the first holder's writes did not reach both replicas");
      }
    }
    Client::Options via = set.client_options();
    via.connect_timeout = 200ms;  // loopback: a dead node refuses at once
    via.command_timeout = 1'000ms;
    Client::Options a_options = via;
    const bool one_behind = row == Row::kWait1OneBehind || row == Row::kWait1AckerLost;
    if (row == Row::kWait1 || one_behind) a_options.wait_replicas = 1;
    Client a(a_options);
    Client b(via);
    SpinLock a_lock(a, name, SpinLock::Options{.lease = kLease, .fenced = fenced});
    SpinLock b_lock(b, name, SpinLock::Options{.lease = kLease, .fenced = fenced});
    (void)b.command({"PING"});  // B's pool now holds a connection to the old primary

    // 1. Hold back replication.
    std::vector<int> cut = one_behind ? std::vector<int>{2} : std::vector<int>{1, 2};
    Client primary(set.node_options(0));
    for (int node : cut) {
      Client replica(set.node_options(node));
      const std::string link = detail::link_address(replica);
      ::kill(set.node(node).pid(), SIGSTOP);
      stopped.push_back(node);
      if (row != Row::kStopOnly) (void)primary.command({"CLIENT", "KILL", "ADDR", link});
    }

    // 2. A takes the lock on the primary alone.
    try {
      r.a_granted = a_lock.try_lock();
      if (r.a_granted && fenced) r.a_token = a_lock.token();
    } catch (const NotReplicated&) {
      r.a_not_replicated = true;
    }
    const auto a_granted_at = Clock::now();

    // 3. The primary dies; the replicas run again; Sentinel promotes one.
    const auto killed_at = Clock::now();
    set.node(0).kill();
    if (row == Row::kWait1AckerLost) set.node(1).kill();
    for (int node : stopped) ::kill(set.node(node).pid(), SIGCONT);
    stopped.clear();
    r.promoted = set.wait_for_failover(0, 30s);
    r.failover_ms = detail::ms_since(killed_at);
    r.promoted_was_behind = one_behind && r.promoted == 2;
    {
      Client promoted(set.node_options(r.promoted));
      r.key_survived = promoted.command({"EXISTS", name}).as_integer() == 1;
    }

    // 4. B, whose Client still points at the dead primary, tries the lock:
    //    its Client asks Sentinel and reaches the new one. Errors while the
    //    other Sentinels catch up are retried for a bounded 5 s; an answer
    //    (granted or not: A's key survived) ends the step.
    const auto b_deadline = Clock::now() + 5s;
    for (;;) {
      try {
        r.b_granted = b_lock.try_lock_for(500ms);
        break;
      } catch (const Error&) {
        if (Clock::now() >= b_deadline) throw;
        std::this_thread::sleep_for(50ms);
      }
    }
    if (r.b_granted && fenced) r.b_token = b_lock.token();
    r.double_grant = r.a_granted && r.b_granted && Clock::now() - a_granted_at < kLease;

    // 5. B writes; then A's stale write. Unfenced, the resource takes any
    //    write (that is what "no fencing" means); fenced, it checks tokens.
    if (r.b_granted && fenced) resource.write(r.b_token, "B");
    if (r.a_granted) {
      const bool accepted = fenced ? resource.write(r.a_token, "A").accepted : true;
      r.stale_rejected = !accepted;
      r.phantom = accepted && r.b_granted;
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  for (int node : stopped) ::kill(set.node(node).pid(), SIGCONT);
  r.wall_ms = detail::ms_since(start);
  return r;
}

}  // namespace locklab::scenarios::failover
