#include "distributed/embedded_replica_set.hpp"

#include <map>
#include <stdexcept>
#include <thread>

#include "distributed/connection.hpp"
#include "distributed/sentinel_resolver.hpp"

namespace locklab::redis {

namespace {

using Clock = std::chrono::steady_clock;

// Status probes poll every 20 ms: Sentinel's own timers tick every 100 ms,
// so a finer poll only burns the CPU the nodes need.
constexpr std::chrono::milliseconds kPoll{20};

Client::Options probe_options(const std::string& host, int port) {
  Client::Options o;
  o.host = host;
  o.port = port;
  o.connect_timeout = std::chrono::milliseconds(200);
  o.command_timeout = std::chrono::milliseconds(500);
  return o;
}

// One command on a fresh connection; its error replies are returned, its
// connection errors thrown.
Reply ask(const EmbeddedServer& server, const std::vector<std::string_view>& args) {
  auto c = detail::Connection::open(probe_options(server.host(), server.port()));
  return c->exchange(args);
}

// "field:value" from an INFO reply, "" if absent.
std::string info_field(const Reply& info, const std::string& field) {
  if (!info.is_string()) return "";
  const std::string& text = info.as_string();
  const std::string key = field + ":";
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    const auto end = text.find_first_of("\r\n", at);
    return text.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
  }
  return "";
}

// SENTINEL MASTER's flat field/value array as a map.
std::map<std::string, std::string> pairs(const Reply& r) {
  std::map<std::string, std::string> m;
  if (!r.is_array()) return m;
  const auto& a = r.as_array();
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) {
    if (a[i].is_string() && a[i + 1].is_string()) m[a[i].as_string()] = a[i + 1].as_string();
  }
  return m;
}

}  // namespace

EmbeddedReplicaSet::EmbeddedReplicaSet() : EmbeddedReplicaSet(Options{}) {}

EmbeddedReplicaSet::EmbeddedReplicaSet(Options options) : options_(std::move(options)) {
  const Options& o = options_;
  if (o.replicas < 1 || o.sentinels < 1 || o.quorum < 1 || o.quorum > o.sentinels || o.master_name.empty() ||
      o.down_after.count() <= 0 || o.failover_timeout.count() <= 0 || o.start_timeout.count() <= 0) {
    throw std::invalid_argument(
        "EmbeddedReplicaSet: needs replicas >= 1, sentinels >= 1, quorum in 1..sentinels, a master name and "
        "positive timings");
  }
  // If anything below throws, the members built so far stop their servers
  // and remove their directories (the destructor does not run).
  EmbeddedServer::Options data;
  data.enable_debug_command = o.enable_debug_command;
  // Any node may become the primary: each sends a full resync straight from
  // memory at once (Redis 7 waits 5 s for more replicas by default, and
  // writes an RDB file without diskless sync).
  data.extra_args = {"--replica-announce-ip", "127.0.0.1", "--repl-diskless-sync", "yes",
                     "--repl-diskless-sync-delay", "0"};
  nodes_.push_back(std::make_unique<EmbeddedServer>(data));
  const std::string primary_port = std::to_string(nodes_[0]->port());
  for (int i = 0; i < o.replicas; ++i) {
    EmbeddedServer::Options replica = data;
    replica.extra_args.insert(replica.extra_args.end(), {"--replicaof", "127.0.0.1", primary_port});
    nodes_.push_back(std::make_unique<EmbeddedServer>(replica));
  }
  EmbeddedServer::Options sentinel;
  sentinel.extra_args = {"--sentinel"};
  const std::string& m = o.master_name;
  sentinel.config_text = "sentinel resolve-hostnames no\n"
                         "sentinel announce-hostnames no\n"
                         "sentinel announce-ip 127.0.0.1\n"
                         "sentinel monitor " + m + " 127.0.0.1 " + primary_port + " " + std::to_string(o.quorum) +
                         "\n"
                         "sentinel down-after-milliseconds " + m + " " + std::to_string(o.down_after.count()) + "\n"
                         "sentinel failover-timeout " + m + " " + std::to_string(o.failover_timeout.count()) + "\n"
                         "sentinel parallel-syncs " + m + " 1\n";
  for (int i = 0; i < o.sentinels; ++i) sentinels_.push_back(std::make_unique<EmbeddedServer>(sentinel));
  wait_until_ready();
}

EmbeddedReplicaSet::~EmbeddedReplicaSet() {
  sentinels_.clear();  // first: a data node stopping must not start a failover
  nodes_.clear();
}

std::string EmbeddedReplicaSet::sentinel_url() const {
  std::string url = "redis+sentinel://";
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    url += (i == 0 ? "" : ",") + sentinels_[i]->host() + ":" + std::to_string(sentinels_[i]->port());
  }
  return url + "/" + options_.master_name;
}

Client::Options EmbeddedReplicaSet::client_options() const {
  Client::Options o;
  for (const auto& s : sentinels_) o.sentinels.emplace_back(s->host(), s->port());
  o.sentinel_master = options_.master_name;
  o.host = sentinels_.front()->host();
  o.port = sentinels_.front()->port();
  return o;
}

Client::Options EmbeddedReplicaSet::node_options(int i) const {
  return nodes_.at(static_cast<std::size_t>(i))->client_options();
}

int EmbeddedReplicaSet::index_of_port(int port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->port() == port) return static_cast<int>(i);
  }
  return -1;
}

int EmbeddedReplicaSet::primary_index() const {
  Client::Options o = client_options();
  o.connect_timeout = std::chrono::milliseconds(200);
  o.command_timeout = std::chrono::milliseconds(500);
  try {
    return index_of_port(resolve_primary(o).port);
  } catch (const Error&) {
    return -1;
  }
}

void EmbeddedReplicaSet::wait_until_ready() {
  const auto deadline = Clock::now() + options_.start_timeout;
  const std::string want_replicas = std::to_string(options_.replicas);
  const std::string want_others = std::to_string(options_.sentinels - 1);
  std::string state;
  while (Clock::now() < deadline) {
    bool ready = true;
    state.clear();
    try {
      for (std::size_t i = 1; i < nodes_.size() && ready; ++i) {
        const std::string link = info_field(ask(*nodes_[i], {"INFO", "replication"}), "master_link_status");
        if (link != "up") {
          ready = false;
          state = "replica " + nodes_[i]->url() + " master_link_status '" + link + "'";
        }
      }
      for (std::size_t i = 0; i < sentinels_.size() && ready; ++i) {
        auto m = pairs(ask(*sentinels_[i], {"SENTINEL", "MASTER", options_.master_name}));
        if (m["flags"] != "master" || m["num-slaves"] != want_replicas || m["num-other-sentinels"] != want_others) {
          ready = false;
          state = "Sentinel " + sentinels_[i]->url() + " flags '" + m["flags"] + "', num-slaves " + m["num-slaves"] +
                  " (want " + want_replicas + "), num-other-sentinels " + m["num-other-sentinels"] + " (want " +
                  want_others + ")";
        }
      }
    } catch (const Error& e) {
      ready = false;
      state = e.what();
    }
    if (ready) return;
    std::this_thread::sleep_for(kPoll);
  }
  throw std::runtime_error("EmbeddedReplicaSet: not ready within " + std::to_string(options_.start_timeout.count()) +
                           " ms; last seen: " + state);
}

int EmbeddedReplicaSet::wait_for_failover(int old, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string seen;
  while (Clock::now() < deadline) {
    seen.clear();
    int agreed = -2;  // -2: no Sentinel asked yet; -1: they disagree or name no new node
    for (const auto& s : sentinels_) {
      if (!s->running()) continue;
      int named = -1;
      try {
        const Reply r = ask(*s, {"SENTINEL", "get-master-addr-by-name", options_.master_name});
        if (r.is_array() && r.as_array().size() == 2) {
          const int port = std::stoi(r.as_array()[1].as_string());
          named = index_of_port(port);
          seen += s->url() + " names port " + std::to_string(port) + "; ";
        }
      } catch (const std::exception& e) {
        seen += s->url() + ": " + e.what() + "; ";
      }
      agreed = (agreed == -2 || agreed == named) ? named : -1;
    }
    if (agreed >= 0 && agreed != old) {
      try {
        if (info_field(ask(*nodes_[static_cast<std::size_t>(agreed)], {"INFO", "replication"}), "role") ==
            "master") {
          return agreed;
        }
      } catch (const Error&) {
        // not answering yet
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  throw std::runtime_error("EmbeddedReplicaSet: no failover within " + std::to_string(timeout.count()) +
                           " ms; Sentinels: " + seen);
}

}  // namespace locklab::redis
