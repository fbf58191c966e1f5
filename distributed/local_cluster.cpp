#include "distributed/local_cluster.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>
#include <thread>

#include "distributed/key_slot.hpp"

namespace locklab::redis {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

LocalCluster::LocalCluster(int masters, std::chrono::milliseconds ready_within, bool wait, bool enable_debug_command) {
  if (masters < 1 || masters > 16) throw std::invalid_argument("LocalCluster: 1..16 masters");
  for (int i = 0; i < masters; ++i) start_node(i, enable_debug_command);
  for (int i = 0; i < masters; ++i) {
    Client c(client_options(i));
    const auto [lo, hi] = slot_range(i, masters);
    c.command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)});
  }
  Client first(client_options(0));
  for (int i = 1; i < masters; ++i) {
    first.command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[static_cast<std::size_t>(i)]->port()),
                   std::to_string(bus_ports_[static_cast<std::size_t>(i)])});
  }
  if (wait) wait_until_ok(ready_within);
}

LocalCluster::~LocalCluster() = default;

void LocalCluster::wait_until_ok(std::chrono::milliseconds ready_within) {
  const int masters = size();
  const auto deadline = Clock::now() + ready_within;
  std::string last;
  for (;;) {
    bool ok = true;
    for (int i = 0; i < masters && ok; ++i) {
      Client c(client_options(i));
      last = c.command({"CLUSTER", "INFO"}).as_string();
      ok = last.find("cluster_state:ok") != std::string::npos &&
           last.find("cluster_known_nodes:" + std::to_string(masters) + "\r") != std::string::npos &&
           last.find("cluster_slots_ok:16384") != std::string::npos;
    }
    if (ok) break;
    if (Clock::now() >= deadline) {
      throw std::runtime_error("cluster not ok within " + std::to_string(ready_within.count()) +
                               " ms; last CLUSTER INFO:\n" + last);
    }
    std::this_thread::sleep_for(50ms);  // the bus gossips every 100 ms: a few polls per round
  }
  ready_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
}

Client::Options LocalCluster::client_options(int node) const {
  Client::Options o = nodes_.at(static_cast<std::size_t>(node))->client_options();
  o.connect_timeout = 1s;
  o.command_timeout = 2s;
  return o;
}

Client::Options LocalCluster::cluster_options() const {
  Client::Options o = client_options(0);
  o.cluster = true;
  return o;
}

std::string LocalCluster::url() const { return "redis+cluster://127.0.0.1:" + std::to_string(port(0)); }

std::pair<int, int> LocalCluster::slot_range(int node, int masters) {
  const int lo = node * kClusterSlots / masters;
  const int hi = (node + 1) * kClusterSlots / masters - 1;
  return {lo, hi};
}

int LocalCluster::node_for_slot(int slot) const {
  for (int i = 0; i < size(); ++i) {
    const auto [lo, hi] = slot_range(i, size());
    if (slot >= lo && slot <= hi) return i;
  }
  throw std::out_of_range("slot outside 0..16383");
}

int LocalCluster::free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("no free port on 127.0.0.1");
  return ntohs(a.sin_port);
}

void LocalCluster::start_node(int i, bool enable_debug_command) {
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {  // the bus port can be taken between probe and bind
    const int bus = free_port();
    EmbeddedServer::Options o;
    o.enable_debug_command = enable_debug_command;
    // Relative to the server's --dir, its own temporary directory. Node
    // timeout 5 s: far above any stall of a loaded 2-core machine, so no
    // node is marked failing while a test runs.
    o.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + std::to_string(i) + ".conf",
                    "--cluster-port", std::to_string(bus), "--cluster-node-timeout", "5000"};
    try {
      nodes_.push_back(std::make_unique<EmbeddedServer>(o));
      bus_ports_.push_back(bus);
      return;
    } catch (const std::exception& e) {
      why = e.what();  // the bus port was taken meanwhile, or cluster mode refused
    }
  }
  throw std::runtime_error("cluster node " + std::to_string(i) + " did not start: " + why);
}

}  // namespace locklab::redis
