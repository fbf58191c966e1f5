// embedded_replica_set.hpp — a private replicated Redis for tests and the
// failover experiment: one primary, its replicas and the Sentinels that
// watch them, each an EmbeddedServer on 127.0.0.1 (a free port, no
// persistence, its own temporary directory), stopped on destruction.
//
// What it guarantees
// ------------------
// - Loopback only: every node binds 127.0.0.1 and announces 127.0.0.1
//   (replica-announce-ip, sentinel announce-ip), and the Sentinels monitor
//   127.0.0.1:<primary port> with hostname resolution off, so no address
//   any of them hands out (INFO, SENTINEL replies, the hello channel) leads
//   off the machine.
// - Ready means ready: the constructor returns only after every replica
//   reports its link to the primary up and every Sentinel reports the
//   primary up, all the replicas, and all the other Sentinels (Sentinels
//   find each other through the primary's hello channel, every 2 s): from
//   then on a failover can start. Bounded by Options::start_timeout;
//   std::runtime_error quoting the state it waited for otherwise (and
//   everything started so far is stopped and removed).
// - Fast failover: down-after-milliseconds 500 and failover-timeout 2000
//   (Sentinel's defaults: 30 s and 3 min). Measured on a 2-core VM: a
//   killed primary is replaced in 1.9-5.4 s, mostly about 2 s. 500 ms, not
//   less: a loaded machine (a parallel build) must not make a live primary
//   look dead; quorum 2 of 3 Sentinels.
// - Cleanup: the destructor stops the Sentinels first (so stopping the data
//   nodes starts no failover), then the data nodes; each EmbeddedServer
//   kills its process and removes its directory, also if the constructor
//   failed half-way.
//
// Which node is the primary: node(0) starts as the primary; after a
// failover, primary_index() asks Sentinel. wait_for_failover() waits until
// every Sentinel names a new primary and that node says role:master.
//
// What it costs: 3 + replicas + sentinels processes (6 by default, ~3 MB
// each); start-up ~1-3 s, most of it the Sentinels' discovery.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"

namespace locklab::redis {

class EmbeddedReplicaSet {
 public:
  struct Options {
    std::string master_name = "locklab";
    int replicas = 2;
    int sentinels = 3;
    int quorum = 2;  // Sentinels that must agree the primary is down
    std::chrono::milliseconds down_after{500};
    std::chrono::milliseconds failover_timeout{2'000};
    std::chrono::milliseconds start_timeout{15'000};
    bool enable_debug_command = true;  // DEBUG SLEEP etc. from local connections
  };

  // Starts everything (see the essay). std::invalid_argument for replicas
  // < 1, sentinels < 1, quorum outside 1..sentinels, non-positive timings
  // or an empty name; std::runtime_error if something does not come up.
  EmbeddedReplicaSet();
  explicit EmbeddedReplicaSet(Options options);
  ~EmbeddedReplicaSet();
  EmbeddedReplicaSet(const EmbeddedReplicaSet&) = delete;
  EmbeddedReplicaSet& operator=(const EmbeddedReplicaSet&) = delete;

  const Options& options() const noexcept { return options_; }
  // The data nodes: node(0) the first primary, then the replicas.
  int nodes() const noexcept { return static_cast<int>(nodes_.size()); }
  EmbeddedServer& node(int i) { return *nodes_.at(static_cast<std::size_t>(i)); }
  int sentinel_count() const noexcept { return static_cast<int>(sentinels_.size()); }
  EmbeddedServer& sentinel(int i) { return *sentinels_.at(static_cast<std::size_t>(i)); }

  // redis+sentinel://127.0.0.1:p1,127.0.0.1:p2,.../<master_name>
  std::string sentinel_url() const;
  // Client options that find the primary through the Sentinels.
  Client::Options client_options() const;
  // Client options for one data node directly (no Sentinel).
  Client::Options node_options(int i) const;

  // The index of the node the first answering Sentinel names as primary,
  // or -1 (no Sentinel answers, or it names no node of this set).
  int primary_index() const;
  // Waits until every running Sentinel names one node other than `old`
  // and that node answers role:master; returns its index.
  // std::runtime_error after `timeout`, naming what each Sentinel said.
  int wait_for_failover(int old, std::chrono::milliseconds timeout);

 private:
  void wait_until_ready();
  int index_of_port(int port) const;

  Options options_;
  std::vector<std::unique_ptr<EmbeddedServer>> nodes_;
  std::vector<std::unique_ptr<EmbeddedServer>> sentinels_;
};

}  // namespace locklab::redis
