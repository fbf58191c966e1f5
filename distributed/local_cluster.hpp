// local_cluster.hpp — a Redis Cluster of n masters (3 by default) on
// 127.0.0.1, for tests, scenarios and benchmarks: each master an
// EmbeddedServer started with --cluster-enabled (a free port, its own
// temporary directory holding its nodes-<i>.conf, no persistence, killed
// if the creating thread dies) and an explicit cluster bus port (the
// default, port + 10000, can overflow 65535 for an ephemeral port).
//
// What it guarantees: the constructor returns with cluster_state:ok, every
// node known and all 16,384 slots served on every node (or, with
// wait = false, once slots are assigned and the nodes asked to meet: call
// wait_until_ok() later, so other work overlaps the ~2 s a fresh master
// waits before it calls itself writable), or throws std::runtime_error
// saying why; either way nothing is left running (members are destroyed).
// Node i serves the contiguous slot range slot_range(i, n), as
// `redis-cli --cluster create` would assign it. No replicas: a master that
// dies takes its slots with it (this is a routing lab, not a failover one).
//
// Cost: n redis-server processes (~3 MB each) and ~1-3 s to come up: the
// CLUSTER MEET handshake over the bus, then each master's wait before it
// accepts writes. Create it on a thread that outlives it (EmbeddedServer's
// PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"

namespace locklab::redis {

class LocalCluster {
 public:
  // `enable_debug_command`: DEBUG from local connections on every node (a
  // fault injector for tests, see embedded_server.hpp).
  explicit LocalCluster(int masters = 3, std::chrono::milliseconds ready_within = std::chrono::seconds(10),
                        bool wait = true, bool enable_debug_command = false);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Bounded: cluster_state:ok, all nodes known and all slots served, on
  // every node; else std::runtime_error quoting the last CLUSTER INFO.
  void wait_until_ok(std::chrono::milliseconds ready_within);

  int size() const noexcept { return static_cast<int>(nodes_.size()); }
  int port(int node) const { return nodes_.at(static_cast<std::size_t>(node))->port(); }
  EmbeddedServer& node(int i) { return *nodes_.at(static_cast<std::size_t>(i)); }
  // A standalone (non-routing) client of node i: what a cluster-unaware
  // client sees, and the way to send a node-local command (CLUSTER SETSLOT,
  // FLUSHALL, CONFIG) to one node.
  Client::Options client_options(int node) const;
  // A routing client of the whole cluster, seeded with node 0
  // (Client::Options::cluster).
  Client::Options cluster_options() const;
  // redis+cluster://127.0.0.1:<node 0's port>.
  std::string url() const;
  // The contiguous range given to node i of n.
  static std::pair<int, int> slot_range(int node, int masters);
  int node_for_slot(int slot) const;
  // From the first node's start to cluster_state:ok everywhere.
  double ready_ms() const noexcept { return ready_ms_; }
  // Any free loopback port (the kernel's choice, as EmbeddedServer's). Racy
  // like every such probe; start_node retries with another. Public for
  // tests that start a single cluster-enabled node.
  static int free_port();

 private:
  void start_node(int i, bool enable_debug_command);

  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<EmbeddedServer>> nodes_;
  std::vector<int> bus_ports_;
  double ready_ms_ = 0;
};

}  // namespace locklab::redis
