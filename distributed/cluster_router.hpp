// cluster_router.hpp — internal: how a Client on a Redis Cluster
// (Client::Options::cluster, or a redis+cluster:// URL) sends each command
// to the master that owns its key, and follows the cluster when it says
// the key is elsewhere.
//
// What it guarantees
// ------------------
// - Routing: a command goes to the owner of its first key's slot (key_slot.hpp)
//   per the slot map, one round trip when the map is right. The first key
//   is args[1] for ordinary commands, the first of KEYS for EVAL/EVALSHA
//   (and FCALL), none for keyless commands (PING, INFO, SCRIPT, PUBLISH ...:
//   keyless_command() lists them), which go to the seed node.
// - MOVED <slot> <host:port> (the slot has a new owner): the slot's entry
//   is corrected at once, the whole map is refreshed (CLUSTER SLOTS, one
//   round trip; concurrent MOVEDs share one refresh), and the command is
//   resent to the new owner.
// - ASK <slot> <host:port> (the slot is being migrated and this key is
//   already on the target): the command is resent to the target preceded
//   by ASKING, both on one connection (a pipeline of two, one round trip),
//   and the map is NOT changed: the slot still belongs to the source until
//   the migration ends.
// - TRYAGAIN (a multi-key command during a migration that split its keys):
//   resent after kTryAgainPause.
// - Bounded: at most kMaxRedirects redirects per command, then
//   TooManyRedirects (cluster_error.hpp) listing the hops. A CROSSSLOT
//   reply becomes CrossSlot naming the keys and their slots.
// - Scripts: EVALSHA on the owner of the first key, with the SCRIPT LOAD
//   done once per node (each node has its own script cache) and again on
//   NOSCRIPT, as the standalone Client does.
// - Pipelines: split by node, one round trip per node involved, replies
//   put back in the caller's order (a keyless command, e.g. WAIT, goes
//   with the keyed command before it, on the same connection); a command
//   answered MOVED/ASK/TRYAGAIN
//   inside a pipeline is resent alone through the routed path. A pipeline
//   that contains MULTI goes whole to its first key's node (a transaction
//   cannot span nodes) and its replies come back as the server gave them.
//   CROSSSLOT inside a pipeline stays an error reply in place, as every
//   other error reply of a pipeline does (client.hpp).
//
// What it costs
// -------------
// One standalone Client per master (its own pool, lazily connected), made
// when the map first names the master; the map is 16,384 small integers
// (32 KiB) read under a shared lock per command. A correct map costs
// nothing over the standalone client but the slot's CRC (~100 ns).
//
// What it does not do
// -------------------
// No reads from replicas (every command goes to a master), no automatic
// retry after kIo / kTimeout / kConnect on a node (as the standalone Client:
// a command whose connection broke may or may not have run), no failover
// handling beyond what MOVED gives after the cluster itself promoted a
// replica. The map is refreshed on MOVED only, not on a timer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/reply.hpp"
#include "distributed/script.hpp"

namespace locklab::redis::detail {

class ClusterRouter {
 public:
  // Redirects followed for one command before TooManyRedirects. A slot
  // being resharded costs at most ASK then MOVED (the migration ended
  // between the two): 2; a failover's MOVED adds one, a TRYAGAIN one more.
  // 5 leaves room for that and is the attempt bound Jedis ships with
  // (maxAttempts = 5); a loop between disagreeing nodes ends in 5 round
  // trips, not a hang.
  static constexpr int kMaxRedirects = 5;
  // Wait before resending after TRYAGAIN: the keys are mid-migration and a
  // MIGRATE of a small key takes well under a millisecond on loopback, so
  // 10 ms lets the migration move on without turning the retry into a spin.
  static constexpr std::chrono::milliseconds kTryAgainPause{10};

  // `options` names the seed node (host, port) and holds what every node
  // connection uses (auth, timeouts, pool size). Loads the slot map from
  // the seed unless options.lazy_connect (then the first command does):
  // throws Error(kConnect) if the seed is down, Error(kServer) if it is not
  // a cluster node ("ERR This instance has cluster support disabled").
  explicit ClusterRouter(const Client::Options& options);
  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // Client::command / command_blocking on the cluster: the reply of the
  // key's owner, redirects followed. Throws as Client::command (kServer for
  // an error reply, CrossSlot, TooManyRedirects).
  Reply command(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout);
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);

  // Sums over the node clients (Client::round_trips and open_connections
  // of a cluster Client): every exchange, redirects and refreshes included.
  std::uint64_t round_trips() const;
  std::size_t open_connections() const;
  // "host:port" of the master the map names for `slot`, empty if none.
  std::string owner_of_slot(int slot) const;
  // Full map loads so far (the first one included).
  std::uint64_t refreshes() const noexcept { return refreshes_.load(std::memory_order_relaxed); }

  // The keys of a command as the cluster sees them (for routing: the first;
  // for a CrossSlot message: all): EVAL-style numkeys commands, MSET's
  // every other argument, BLPOP-style trailing timeouts; none for keyless
  // commands; else args[1..] for the multi-key commands (MGET, DEL ...) and
  // args[1] for the rest.
  static std::vector<std::string_view> keys_of(const std::vector<std::string_view>& args);
  static bool keyless_command(std::string_view name);

 private:
  struct Node {
    std::string endpoint;
    std::unique_ptr<Client> client;
    std::shared_ptr<const std::string> origin;
  };
  Node& node_at(const std::string& host, int port);
  Node& owner(int slot);
  Node& seed();
  void refresh(std::uint64_t seen_refreshes);
  void load_map_from(Node& node);
  // Client::exchange on `node`, preceded by ASKING when `asking`.
  static Reply exchange_on(Client& node, const std::vector<std::string_view>& args, bool asking,
                           std::chrono::milliseconds extra_timeout);
  // Sends via `send(node, asking)` to the owner of keys.front()'s slot (the
  // seed if no keys), following redirects (essay); the final reply, error
  // replies other than redirects and CROSSSLOT in place.
  template <class Send>
  Reply routed(const std::vector<std::string_view>& keys, Send&& send);

  Client::Options options_;
  mutable std::shared_mutex map_mu_;
  std::vector<std::unique_ptr<Node>> nodes_;  // never shrinks: references stay valid
  std::unordered_map<std::string, Node*> by_endpoint_;
  std::vector<std::int16_t> slot_owner_;  // index into nodes_, -1 unknown
  std::mutex refresh_mu_;
  std::atomic<std::uint64_t> refreshes_{0};
};

}  // namespace locklab::redis::detail
