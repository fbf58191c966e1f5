#include "distributed/cluster_router.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <thread>

#include "distributed/cluster_error.hpp"
#include "distributed/error.hpp"
#include "distributed/key_slot.hpp"

namespace locklab::redis::detail {

namespace {

std::string upper(std::string_view s) {
  std::string u(s);
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return u;
}

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381".
struct Redirect {
  bool ask = false;
  int slot = -1;
  std::string host;
  int port = 0;
};

std::optional<Redirect> parse_redirect(const std::string& text) {
  Redirect r;
  std::string_view rest;
  if (starts_with(text, "MOVED ")) {
    rest = std::string_view(text).substr(6);
  } else if (starts_with(text, "ASK ")) {
    r.ask = true;
    rest = std::string_view(text).substr(4);
  } else {
    return std::nullopt;
  }
  const auto space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view slot = rest.substr(0, space);
  const std::string_view endpoint = rest.substr(space + 1);
  const auto colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto [p1, e1] = std::from_chars(slot.data(), slot.data() + slot.size(), r.slot);
  const std::string_view port = endpoint.substr(colon + 1);
  auto [p2, e2] = std::from_chars(port.data(), port.data() + port.size(), r.port);
  if (e1 != std::errc{} || e2 != std::errc{} || r.slot < 0 || r.slot >= kClusterSlots) return std::nullopt;
  r.host = std::string(endpoint.substr(0, colon));
  return r;
}

std::string quoted_keys(const std::vector<std::string_view>& keys, std::vector<std::string>& names,
                        std::vector<int>& slots) {
  std::string list;
  for (const auto k : keys) {
    names.emplace_back(k);
    slots.push_back(key_slot(k));
    if (!list.empty()) list += ", ";
    list += "'" + names.back() + "' (slot " + std::to_string(slots.back()) + ")";
  }
  return list;
}

}  // namespace

bool ClusterRouter::keyless_command(std::string_view name) {
  static const char* const kKeyless[] = {
      "PING",     "ECHO",     "INFO",       "TIME",     "DBSIZE",    "FLUSHALL", "FLUSHDB",      "SCRIPT",
      "CLUSTER",  "CONFIG",   "CLIENT",     "ACL",      "DEBUG",     "PUBLISH",  "WAIT",         "MULTI",
      "EXEC",     "DISCARD",  "READONLY",   "READWRITE", "AUTH",     "SELECT",   "HELLO",        "COMMAND",
      "LATENCY",  "SLOWLOG",  "SAVE",       "BGSAVE",   "LASTSAVE",  "ROLE",     "RANDOMKEY",    "KEYS",
      "SCAN",     "FUNCTION", "SUBSCRIBE",  "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "PUBSUB", "QUIT",
      "RESET",    "SHUTDOWN", "MONITOR",    "SWAPDB",   "LOLWUT"};
  const std::string u = upper(name);
  return std::any_of(std::begin(kKeyless), std::end(kKeyless), [&](const char* k) { return u == k; });
}

std::vector<std::string_view> ClusterRouter::keys_of(const std::vector<std::string_view>& args) {
  if (args.size() < 2 || keyless_command(args[0])) return {};
  const std::string name = upper(args[0]);
  std::vector<std::string_view> keys;
  if (name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" || name == "EVALSHA_RO" || name == "FCALL" ||
      name == "FCALL_RO") {
    std::size_t n = 0;
    if (args.size() < 3) return {};
    auto [p, ec] = std::from_chars(args[2].data(), args[2].data() + args[2].size(), n);
    if (ec != std::errc{}) return {};  // the server refuses it, on whichever node
    for (std::size_t i = 3; i < args.size() && i < 3 + n; ++i) keys.push_back(args[i]);
  } else if (name == "MSET" || name == "MSETNX") {
    for (std::size_t i = 1; i < args.size(); i += 2) keys.push_back(args[i]);
  } else if (name == "BLPOP" || name == "BRPOP" || name == "BZPOPMIN" || name == "BZPOPMAX") {
    for (std::size_t i = 1; i + 1 < args.size(); ++i) keys.push_back(args[i]);
  } else if (name == "MGET" || name == "DEL" || name == "UNLINK" || name == "EXISTS" || name == "TOUCH" ||
             name == "WATCH" || name == "SINTER" || name == "SUNION" || name == "SDIFF" || name == "PFCOUNT") {
    keys.assign(args.begin() + 1, args.end());
  } else if (name == "OBJECT" || name == "XINFO" || name == "MEMORY") {
    if (args.size() > 2) keys.push_back(args[2]);  // OBJECT ENCODING <key>, MEMORY USAGE <key>
  } else {
    keys.push_back(args[1]);
  }
  return keys;
}

ClusterRouter::ClusterRouter(const Client::Options& options)
    : options_(options), slot_owner_(kClusterSlots, std::int16_t{-1}) {
  node_at(options_.host, options_.port);  // nodes_[0]: the seed
  if (!options_.lazy_connect) refresh(0);
}

ClusterRouter::~ClusterRouter() = default;

ClusterRouter::Node& ClusterRouter::node_at(const std::string& host, int port) {
  const std::string endpoint = host + ":" + std::to_string(port);
  {
    std::shared_lock g(map_mu_);
    if (auto it = by_endpoint_.find(endpoint); it != by_endpoint_.end()) return *it->second;
  }
  std::unique_lock g(map_mu_);
  if (auto it = by_endpoint_.find(endpoint); it != by_endpoint_.end()) return *it->second;
  Client::Options o = options_;
  o.host = host;
  o.port = port;
  o.cluster = false;
  o.lazy_connect = true;  // a node connects when a command first goes there
  auto node = std::make_unique<Node>();
  node->endpoint = endpoint;
  node->client = std::make_unique<Client>(o);
  node->origin = std::make_shared<const std::string>(endpoint);
  Node& ref = *node;
  nodes_.push_back(std::move(node));
  by_endpoint_[endpoint] = &ref;
  return ref;
}

ClusterRouter::Node& ClusterRouter::seed() {
  std::shared_lock g(map_mu_);
  return *nodes_.front();
}

ClusterRouter::Node& ClusterRouter::owner(int slot) {
  std::shared_lock g(map_mu_);
  const std::int16_t i = slot_owner_[static_cast<std::size_t>(slot)];
  // An unassigned slot (or a map not loaded yet): the seed, which answers
  // MOVED if another node serves it.
  return *nodes_[i < 0 ? 0 : static_cast<std::size_t>(i)];
}

std::string ClusterRouter::owner_of_slot(int slot) const {
  if (slot < 0 || slot >= kClusterSlots) throw std::out_of_range("ClusterRouter: slot outside 0..16383");
  std::shared_lock g(map_mu_);
  const std::int16_t i = slot_owner_[static_cast<std::size_t>(slot)];
  return i < 0 ? std::string() : nodes_[static_cast<std::size_t>(i)]->endpoint;
}

// CLUSTER SLOTS: [[first, last, [host, port, id, ...], replica...], ...].
// Deprecated since Redis 7.0 in favour of CLUSTER SHARDS, but answered by
// every version from 3.0 on, and its shape is all the routing needs.
void ClusterRouter::load_map_from(Node& node) {
  Reply r = node.client->exchange({"CLUSTER", "SLOTS"}, {});
  if (r.is_error()) throw Error(Error::Kind::kServer, node.endpoint + " replied to CLUSTER SLOTS: " + r.as_string());
  r.set_origin(node.origin);
  struct Range {
    int first, last;
    std::string host;
    int port;
  };
  std::vector<Range> ranges;
  for (const Reply& range : r.as_array()) {
    const auto& fields = range.as_array();
    if (fields.size() < 3) range.unexpected("a slot range [first, last, [host, port, ...], ...]");
    const auto& master = fields[2].as_array();
    if (master.size() < 2) fields[2].unexpected("a node [host, port, ...]");
    std::string host = master[0].as_string();
    // An empty host means "the address you reached me on" (cluster-announce).
    if (host.empty() || host == "?") host = node.client->options().host;
    ranges.push_back({static_cast<int>(fields[0].as_integer()), static_cast<int>(fields[1].as_integer()),
                      std::move(host), static_cast<int>(master[1].as_integer())});
  }
  std::vector<Node*> owners;
  for (const auto& range : ranges) owners.push_back(&node_at(range.host, range.port));
  std::unique_lock g(map_mu_);
  std::fill(slot_owner_.begin(), slot_owner_.end(), std::int16_t{-1});
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto index = static_cast<std::int16_t>(
        std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == owners[i]; }) -
        nodes_.begin());
    for (int s = std::max(0, ranges[i].first); s <= std::min(kClusterSlots - 1, ranges[i].last); ++s) {
      slot_owner_[static_cast<std::size_t>(s)] = index;
    }
  }
}

void ClusterRouter::refresh(std::uint64_t seen_refreshes) {
  std::lock_guard g(refresh_mu_);
  // Another thread's refresh completed after this one's caller looked: its
  // map is at least as new as the MOVED that brought us here.
  if (refreshes_.load() != seen_refreshes) return;
  std::vector<Node*> candidates;
  {
    std::shared_lock m(map_mu_);
    for (const auto& n : nodes_) candidates.push_back(n.get());
  }
  std::optional<Error> last;
  for (Node* n : candidates) {  // the seed first, then every node learnt since
    try {
      load_map_from(*n);
      refreshes_.fetch_add(1);
      return;
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::kServer || e.kind() == Error::Kind::kAuth) throw;  // not a cluster node, refused
      last = e;
    }
  }
  throw *last;
}

// ASKING sets a one-command flag on the connection: the pair must share a
// connection, hence a pipeline of two. (Its timeout is the command timeout:
// a blocking command under ASK gets no extra block time.)
Reply ClusterRouter::exchange_on(Client& node, const std::vector<std::string_view>& args, bool asking,
                                 std::chrono::milliseconds extra_timeout) {
  if (!asking) return node.exchange(args, extra_timeout);
  const std::vector<std::vector<std::string>> pair = {{"ASKING"}, std::vector<std::string>(args.begin(), args.end())};
  std::vector<Reply> replies = node.pipeline(pair);
  return replies[0].is_error() ? replies[0] : replies[1];
}

template <class Send>
Reply ClusterRouter::routed(const std::vector<std::string_view>& keys, Send&& send) {
  if (refreshes_.load() == 0) refresh(0);  // lazy_connect: the first command loads the map
  const int slot = keys.empty() ? -1 : key_slot(keys.front());
  std::uint64_t seen = refreshes_.load();
  Node* node = slot < 0 ? &seed() : &owner(slot);
  bool asking = false;
  std::vector<std::string> hops;
  for (;;) {
    Reply r = send(*node, asking);
    if (!r.is_error()) {
      if (r.origin().empty()) r.set_origin(node->origin);
      return r;
    }
    const std::string& text = r.as_string();
    if (starts_with(text, "CROSSSLOT")) {
      std::vector<std::string> names;
      std::vector<int> slots;
      const std::string list = quoted_keys(keys, names, slots);
      throw CrossSlot(node->endpoint + " replied: " + text + ": the keys of one command must share a hash slot: " +
                          list + " (put them in one {hash tag})",
                      std::move(names), std::move(slots));
    }
    const std::optional<Redirect> redirect = parse_redirect(text);
    const bool try_again = starts_with(text, "TRYAGAIN");
    if (!redirect && !try_again) {
      if (r.origin().empty()) r.set_origin(node->origin);
      return r;  // an ordinary error reply: the caller's to throw
    }
    hops.push_back(node->endpoint + ": " + text);
    if (hops.size() > static_cast<std::size_t>(kMaxRedirects)) {
      std::string list;
      for (const auto& h : hops) list += (list.empty() ? "" : "; ") + h;
      throw TooManyRedirects("gave up after " + std::to_string(kMaxRedirects) + " redirects of one command: " + list,
                             std::move(hops));
    }
    if (try_again) {
      std::this_thread::sleep_for(kTryAgainPause);
      node = slot < 0 ? &seed() : &owner(slot);
      asking = false;
    } else if (redirect->ask) {
      node = &node_at(redirect->host, redirect->port);
      asking = true;
    } else {
      node = &node_at(redirect->host, redirect->port);
      {
        std::unique_lock g(map_mu_);
        const auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == node; });
        slot_owner_[static_cast<std::size_t>(redirect->slot)] = static_cast<std::int16_t>(it - nodes_.begin());
      }
      try {
        refresh(seen);
      } catch (const Error&) {
        // The MOVED itself named the owner: the command goes on without the
        // rest of the map, and the next MOVED tries again.
      }
      seen = refreshes_.load();
      asking = false;
    }
  }
}

Reply ClusterRouter::command(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout) {
  Reply r = routed(keys_of(args), [&](Node& node, bool asking) { return exchange_on(*node.client, args, asking, extra_timeout); });
  if (r.is_error()) throw Error(Error::Kind::kServer, r.origin() + " replied: " + r.as_string());
  return r;
}

Reply ClusterRouter::eval(const Script& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args) {
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back("");  // the SHA, per node below
  argv.push_back(numkeys);
  for (const auto& k : keys) argv.push_back(k);
  for (const auto& a : args) argv.push_back(a);
  const std::vector<std::string_view> routing(argv.begin() + 3, argv.begin() + 3 + static_cast<std::ptrdiff_t>(keys.size()));
  Reply r = routed(routing, [&](Node& node, bool asking) {
    // Each node has its own script cache: loaded once per node, and again
    // after NOSCRIPT (that node restarted or flushed its scripts).
    Client::LoadedScript loaded = node.client->sha_for(script, false);
    argv[1] = loaded.sha;
    Reply reply = exchange_on(*node.client, argv, asking, {});
    if (reply.is_error() && reply.as_string().rfind("NOSCRIPT", 0) == 0) {
      loaded = node.client->sha_for(script, true);
      argv[1] = loaded.sha;
      reply = exchange_on(*node.client, argv, asking, {});
    }
    reply.set_origin(loaded.origin);
    return reply;
  });
  if (r.is_error()) {
    // The origin reads "host:port (script <name>)".
    const std::string& origin = r.origin();
    throw Error(Error::Kind::kServer, origin.substr(0, origin.find(' ')) + " replied to script " + script.name() + ": " +
                                          r.as_string());
  }
  return r;
}

std::vector<Reply> ClusterRouter::pipeline(const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return {};
  if (refreshes_.load() == 0) refresh(0);
  std::vector<std::vector<std::string_view>> views;
  views.reserve(commands.size());
  for (const auto& c : commands) views.emplace_back(c.begin(), c.end());
  auto node_of = [&](const std::vector<std::string_view>& args) -> Node& {
    const auto keys = keys_of(args);
    return keys.empty() ? seed() : owner(key_slot(keys.front()));
  };
  const bool transaction = std::any_of(views.begin(), views.end(), [](const auto& v) { return upper(v[0]) == "MULTI"; });
  if (transaction) {
    // One node for the whole batch: the first keyed command's.
    Node* target = &seed();
    for (const auto& v : views) {
      if (!keys_of(v).empty()) {
        target = &node_of(v);
        break;
      }
    }
    std::vector<Reply> replies = target->client->pipeline(commands);
    for (auto& r : replies) r.set_origin(target->origin);
    return replies;
  }
  // One sub-pipeline per node, in the order nodes first appear. A keyless
  // command goes with the keyed command before it (the first keyed one if
  // none): WAIT after a write must reach that write's master, on that
  // connection, and a pipeline of keyless commands goes to the seed.
  std::vector<Node*> target(views.size(), nullptr);
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (!keys_of(views[i]).empty()) target[i] = &node_of(views[i]);
  }
  Node* previous = nullptr;
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (target[i] != nullptr) {
      previous = target[i];
    } else if (previous != nullptr) {
      target[i] = previous;
    } else {
      const auto next = std::find_if(target.begin() + static_cast<std::ptrdiff_t>(i), target.end(),
                                     [](Node* n) { return n != nullptr; });
      target[i] = next != target.end() ? *next : &seed();
    }
  }
  std::vector<Node*> order;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < views.size(); ++i) {
    Node* n = target[i];
    auto it = std::find(order.begin(), order.end(), n);
    if (it == order.end()) {
      order.push_back(n);
      members.emplace_back();
      it = order.end() - 1;
    }
    members[static_cast<std::size_t>(it - order.begin())].push_back(i);
  }
  std::vector<Reply> replies(commands.size());
  for (std::size_t g = 0; g < order.size(); ++g) {
    std::vector<std::vector<std::string>> batch;
    for (std::size_t i : members[g]) batch.push_back(commands[i]);
    std::vector<Reply> got = order[g]->client->pipeline(batch);
    for (std::size_t j = 0; j < got.size(); ++j) {
      got[j].set_origin(order[g]->origin);
      replies[members[g][j]] = std::move(got[j]);
    }
  }
  // A command sent to a node that no longer owns its slot: resent alone.
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].is_error()) continue;
    const std::string& text = replies[i].as_string();
    if (!parse_redirect(text) && !starts_with(text, "TRYAGAIN")) continue;
    replies[i] = routed(keys_of(views[i]), [&](Node& node, bool asking) { return exchange_on(*node.client, views[i], asking, {}); });
  }
  return replies;
}

std::uint64_t ClusterRouter::round_trips() const {
  std::shared_lock g(map_mu_);
  std::uint64_t sum = 0;
  for (const auto& n : nodes_) sum += n->client->round_trips();
  return sum;
}

std::size_t ClusterRouter::open_connections() const {
  std::shared_lock g(map_mu_);
  std::size_t sum = 0;
  for (const auto& n : nodes_) sum += n->client->open_connections();
  return sum;
}

}  // namespace locklab::redis::detail
