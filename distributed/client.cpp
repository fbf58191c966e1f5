#include "distributed/client.hpp"

#include <unistd.h>

#include <cstdlib>
#include <random>
#include <stdexcept>

#include "distributed/cluster_router.hpp"
#include "distributed/connection.hpp"
#include "distributed/key_slot.hpp"
#include "distributed/lease_renewer.hpp"
#include "distributed/sentinel_resolver.hpp"
#include "distributed/subscriber.hpp"
#include "distributed/url_parts.hpp"

namespace locklab::redis {

namespace {

std::string random_id() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t word = rd();
    for (int j = 0; j < 8; ++j) {
      id.push_back(kHex[word & 0xF]);
      word >>= 4;
    }
  }
  return id;
}

// What a child made by fork() inherited with a thread it does not have
// (client.hpp, "After fork()"): never destroyed, since its destructor would
// join that thread, yet kept reachable so leak checkers do not report it.
template <class T>
void set_aside_for_ever(std::unique_ptr<T> inherited) {
  static auto* const kept = new std::vector<std::unique_ptr<T>>;  // never freed: see above
  kept->push_back(std::move(inherited));
}

std::uint64_t this_thread_number() {
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

}  // namespace

std::string Client::Options::redacted_url(std::string_view url) {
  const auto at = url.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const auto scheme_end = url.find("://");
  const std::size_t from = scheme_end != std::string_view::npos && scheme_end < at ? scheme_end + 3 : 0;
  return std::string(url.substr(0, from)) + "***" + std::string(url.substr(at));
}

Client::Options Client::Options::from_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.rfind("redis+sentinel://", 0) == 0) return parse_sentinel_url(url);
  constexpr std::string_view kClusterScheme = "redis+cluster://";
  const std::string shown = redacted_url(url);  // never a user or password in a message
  Options o;
  std::string_view rest;
  if (url.substr(0, kScheme.size()) == kScheme) {
    rest = url.substr(kScheme.size());
  } else if (url.substr(0, kClusterScheme.size()) == kClusterScheme) {
    rest = url.substr(kClusterScheme.size());
    o.cluster = true;
  } else {
    throw std::invalid_argument("redis URL '" + shown + "': must start with redis:// or redis+cluster://");
  }
  detail::take_url_credentials(rest, o.user, o.password);
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty()) o.db = detail::parse_url_number(db, "redis URL", "database number", shown);
    if (o.db < 0) throw std::invalid_argument("redis URL '" + shown + "': negative database number");
  }
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    o.port = detail::parse_url_number(rest.substr(colon + 1), "redis URL", "port", shown);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) throw std::invalid_argument("redis URL '" + shown + "': no host");
  if (o.port < 1 || o.port > 65535) throw std::invalid_argument("redis URL '" + shown + "': port out of range");
  if (o.cluster && o.db != 0) {
    throw std::invalid_argument("redis URL '" + shown + "': a Redis Cluster has database 0 only");
  }
  o.host = std::string(rest);
  return o;
}

std::optional<Client::Options> Client::Options::from_env() {
  const char* url = std::getenv("LOCKLAB_REDIS_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  Options o = from_url(url);
  if (const char* pw = std::getenv("LOCKLAB_REDIS_PASSWORD"); pw != nullptr && *pw != '\0') o.password = pw;
  return o;
}

Client::Client(Options options)
    : options_(std::move(options)), id_(random_id()), id_pid_(::getpid()), pool_pid_(id_pid_) {
  if (options_.port < 1 || options_.port > 65535) throw std::invalid_argument("Client: port out of range");
  if (options_.connect_timeout.count() <= 0 || options_.command_timeout.count() <= 0) {
    throw std::invalid_argument("Client: connect_timeout and command_timeout must be positive");
  }
  if (options_.max_connections == 0) throw std::invalid_argument("Client: max_connections must be at least 1");
  if (options_.wait_replicas < 0) throw std::invalid_argument("Client: wait_replicas must be >= 0");
  // The WAIT's reply is read within command_timeout (replica_wait.hpp).
  if (options_.wait_replicas > 0 &&
      (options_.wait_timeout.count() <= 0 || options_.wait_timeout >= options_.command_timeout)) {
    throw std::invalid_argument("Client: wait_timeout must be positive and below command_timeout");
  }
  // A cluster finds its masters from its seed and its slot map; Sentinel
  // watches one primary. The two are different deployments, not layers.
  if (options_.cluster && !options_.sentinels.empty()) {
    throw std::invalid_argument("Client: cluster and sentinels cannot be combined (a Redis Cluster is not found through Sentinel)");
  }
  if (!options_.sentinels.empty()) {
    // Asked even with lazy_connect: without an answer there is no address.
    const PrimaryAddress primary = resolve_primary(options_);
    options_.host = primary.host;
    options_.port = primary.port;
  }
  primary_host_ = options_.host;
  primary_port_ = options_.port;
  origin_ = std::make_shared<const std::string>(
      options_.sentinels.empty() ? options_.endpoint() : "'" + options_.sentinel_master + "' (via Sentinel)");
  if (options_.cluster) {
    if (options_.db != 0) throw std::invalid_argument("Client: a Redis Cluster has database 0 only");
    router_ = std::make_unique<detail::ClusterRouter>(options_);
    return;
  }
  if (options_.lazy_connect) return;
  auto first = detail::Connection::open(options_, 0);
  std::lock_guard g(pool_mu_);
  open_ = 1;
  idle_.push_back(std::move(first));
}

Client::~Client() {
  {
    // First: its jobs send through the pool below (none should be left:
    // every lock is destroyed by now, see the header).
    std::lock_guard g(renewer_mu_);
    abandon_inherited_renewer();
    lease_renewer_.reset();
  }
  {
    std::lock_guard g(subscriber_mu_);
    abandon_inherited_subscriber();
    subscriber_.reset();
  }
  std::lock_guard g(pool_mu_);
  idle_.clear();
}

// After fork() the child is a new owner: were it to keep the parent's id,
// every thread_owner() string of the forking thread would be the parent's,
// and the child could re-enter or release the parent's holds.
std::string Client::id() const {
  std::lock_guard g(id_mu_);
  if (const pid_t now = ::getpid(); now != id_pid_) {
    id_ = random_id();
    id_pid_ = now;
  }
  return id_;
}

std::string Client::thread_owner() const { return id() + ":" + std::to_string(this_thread_number()); }

void Client::drop_inherited_connections() {
  const pid_t now = ::getpid();
  if (now == pool_pid_) return;
  // These sockets are the parent's too. Destroying a Connection calls
  // redisFree, which closes this process's descriptor and sends nothing
  // (no QUIT), so the parent's connections stay open and in sync. The
  // connections other threads had borrowed at the fork stay with those
  // threads, which do not exist here: only the count is reset.
  idle_.clear();
  open_ = 0;
  ++generation_;
  pool_pid_ = now;
}

// A Subscriber started before fork() has a reader thread that the child
// does not have: waiting on it would wait for replies nobody reads, and
// destroying it would join a thread that is not there (std::thread cannot
// be joined or detached in the child). So it is set aside, never destroyed:
// kept reachable (so leak checkers do not report it) for the child's
// lifetime, with the child's copies of its descriptors closed.
void Client::abandon_inherited_subscriber() {
  if (!subscriber_ || subscriber_pid_ == ::getpid()) return;
  subscriber_->close_descriptors_in_forked_child();
  set_aside_for_ever(std::move(subscriber_));
}

// The parent's timer thread does not exist in the child, and it may have
// held the renewer's mutex at the fork: the renewer is set aside untouched
// (not even cancelled: cancel() would lock that mutex), kept reachable.
void Client::abandon_inherited_renewer() {
  if (!lease_renewer_ || renewer_pid_ == ::getpid()) return;
  set_aside_for_ever(std::move(lease_renewer_));
}

std::size_t Client::open_connections() const {
  if (router_) return router_->open_connections();
  std::lock_guard g(pool_mu_);
  return open_;
}

std::uint64_t Client::round_trips() const noexcept {
  const std::uint64_t own = round_trips_.load(std::memory_order_relaxed);
  return router_ ? own + router_->round_trips() : own;
}

std::unique_ptr<detail::Connection> Client::take() {
  std::unique_lock g(pool_mu_);
  drop_inherited_connections();
  const auto deadline = std::chrono::steady_clock::now() + options_.command_timeout;
  for (;;) {
    while (!idle_.empty()) {
      std::unique_ptr<detail::Connection> c = std::move(idle_.back());
      idle_.pop_back();
      // A connection opened before a failure was seen is probably dead too;
      // one the server closed while idle (restart, timeout) surely is.
      if (c->generation() == generation_ && c->idle_and_alive()) return c;
      --open_;
    }
    if (open_ < options_.max_connections) {
      ++open_;
      const std::uint64_t gen = generation_;
      const Options target = connection_options();
      g.unlock();
      try {
        return detail::Connection::open(target, gen);
      } catch (...) {
        g.lock();
        --open_;
        pool_cv_.notify_one();
        throw;
      }
    }
    if (pool_cv_.wait_until(g, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.max_connections) {
      throw Error(Error::Kind::kTimeout, "no free connection to " + options_.endpoint() + " after " +
                                             std::to_string(options_.command_timeout.count()) + " ms (all " +
                                             std::to_string(options_.max_connections) + " busy)");
    }
  }
}

void Client::give_back(std::unique_ptr<detail::Connection> c) {
  std::lock_guard g(pool_mu_);
  idle_.push_back(std::move(c));
  pool_cv_.notify_one();
}

void Client::discard(std::unique_ptr<detail::Connection> c, bool broken) {
  c.reset();
  std::lock_guard g(pool_mu_);
  --open_;
  if (broken) ++generation_;
  pool_cv_.notify_one();
}

Client::Options Client::connection_options() const {
  Options target = options_;
  target.host = primary_host_;
  target.port = primary_port_;
  return target;
}

// With Sentinel, the retries of "Following a failover" (client.hpp): at
// most one, and only where the command surely did not run.
Reply Client::exchange(const std::vector<std::string_view>& args, std::chrono::milliseconds extra_timeout) {
  for (bool first = true;; first = false) {
    std::unique_ptr<detail::Connection> c;
    try {
      c = take();
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::kConnect && follow_primary() && first) continue;
      throw;
    }
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    Reply r;
    try {
      r = c->exchange(args, extra_timeout);
    } catch (const Error& e) {
      // kTimeout: a late reply would be read by the next user; kIo: broken.
      discard(std::move(c), e.kind() == Error::Kind::kIo);
      if (e.kind() == Error::Kind::kIo || e.kind() == Error::Kind::kConnect) {
        if (follow_primary() && e.kind() == Error::Kind::kConnect && first) continue;
      }
      throw;
    }
    give_back(std::move(c));
    if (first && r.is_error() && r.as_string().rfind("READONLY", 0) == 0 && follow_primary()) continue;
    return r;
  }
}

std::string Client::primary_endpoint() const {
  std::lock_guard g(pool_mu_);
  return primary_host_ + ":" + std::to_string(primary_port_);
}

bool Client::follow_primary() noexcept {
  if (options_.sentinels.empty()) return false;
  try {
    const PrimaryAddress primary = resolve_primary(options_);
    std::lock_guard g(pool_mu_);
    if (primary.host == primary_host_ && primary.port == primary_port_) return false;
    primary_host_ = primary.host;
    primary_port_ = primary.port;
    ++generation_;  // every pooled connection leads to the old primary
    return true;
  } catch (...) {
    return false;  // no Sentinel answered: the command's own error says enough
  }
}

namespace {
Reply checked(Reply r, const std::shared_ptr<const std::string>& endpoint) {
  if (r.is_error()) throw Error(Error::Kind::kServer, *endpoint + " replied: " + r.as_string());
  r.set_origin(endpoint);
  return r;
}
}  // namespace

Reply Client::command(std::initializer_list<std::string_view> args) {
  if (router_) return router_->command(std::vector<std::string_view>(args), {});
  return checked(exchange(std::vector<std::string_view>(args), {}), origin_);
}

Reply Client::command(const std::vector<std::string>& args) {
  if (router_) return router_->command(std::vector<std::string_view>(args.begin(), args.end()), {});
  return checked(exchange(std::vector<std::string_view>(args.begin(), args.end()), {}), origin_);
}

Reply Client::command_blocking(const std::vector<std::string>& args, std::chrono::milliseconds block) {
  if (router_) return router_->command(std::vector<std::string_view>(args.begin(), args.end()), block);
  return checked(exchange(std::vector<std::string_view>(args.begin(), args.end()), block), origin_);
}

std::vector<Reply> Client::pipeline(const std::vector<std::vector<std::string>>& commands) {
  for (const auto& command : commands) {
    if (command.empty()) throw std::invalid_argument("Client::pipeline: a command with no arguments");
  }
  if (commands.empty()) return {};
  if (router_) return router_->pipeline(commands);
  std::unique_ptr<detail::Connection> c;
  try {
    c = take();
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::kConnect) follow_primary();
    throw;
  }
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Reply> replies;
  try {
    replies = c->pipeline(commands);
  } catch (const Error& e) {
    // Unread replies of this batch would be read by the next user.
    discard(std::move(c), e.kind() == Error::Kind::kIo);
    if (e.kind() == Error::Kind::kIo || e.kind() == Error::Kind::kConnect) follow_primary();
    throw;
  }
  give_back(std::move(c));
  for (auto& r : replies) r.set_origin(origin_);
  return replies;
}

Client::LoadedScript Client::sha_for(const Script& script, bool reload) {
  if (!reload) {
    std::lock_guard g(scripts_mu_);
    if (auto it = shas_.find(&script); it != shas_.end()) return it->second;
  }
  Reply r = exchange({"SCRIPT", "LOAD", script.source()}, {});
  if (r.is_error()) {
    throw Error(Error::Kind::kServer,
                options_.endpoint() + " refused to load script " + script.name() + ": " + r.as_string());
  }
  r.set_origin(origin_);
  LoadedScript loaded{r.as_string(),
                      std::make_shared<const std::string>(options_.endpoint() + " (script " + script.name() + ")")};
  std::lock_guard g(scripts_mu_);
  shas_[&script] = loaded;
  return loaded;
}

Reply Client::eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  if (router_) return router_->eval(script, keys, args);
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back("");  // the SHA, filled in below
  argv.push_back(numkeys);
  for (const auto& k : keys) argv.push_back(k);
  for (const auto& a : args) argv.push_back(a);
  LoadedScript loaded = sha_for(script, false);
  argv[1] = loaded.sha;
  Reply r = exchange(argv, {});
  if (r.is_error() && r.as_string().rfind("NOSCRIPT", 0) == 0) {
    loaded = sha_for(script, true);
    argv[1] = loaded.sha;
    r = exchange(argv, {});
  }
  if (r.is_error()) {
    throw Error(Error::Kind::kServer,
                options_.endpoint() + " replied to script " + script.name() + ": " + r.as_string());
  }
  r.set_origin(loaded.origin);
  return r;
}

Subscriber& Client::subscriber() {
  std::lock_guard g(subscriber_mu_);
  abandon_inherited_subscriber();
  if (!subscriber_) {
    Options target;
    {
      std::lock_guard p(pool_mu_);
      target = connection_options();
    }
    if (router_) {
      // Each channel on the master that owns its slot now (the router
      // outlives the Subscriber: ~Client resets it first).
      detail::ClusterRouter* router = router_.get();
      subscriber_ = std::make_unique<Subscriber>(
          target, [router](const std::string& channel) { return router->owner_of_slot(key_slot(channel)); });
    } else {
      subscriber_ = std::make_unique<Subscriber>(target);
    }
    subscriber_pid_ = ::getpid();
  }
  return *subscriber_;
}

Subscriber* Client::subscriber_if_started() {
  std::lock_guard g(subscriber_mu_);
  abandon_inherited_subscriber();
  return subscriber_.get();
}

LeaseRenewer& Client::lease_renewer() {
  std::lock_guard g(renewer_mu_);
  abandon_inherited_renewer();
  if (!lease_renewer_) {
    lease_renewer_ = std::make_unique<LeaseRenewer>();
    renewer_pid_ = ::getpid();
  }
  return *lease_renewer_;
}

LeaseRenewer* Client::lease_renewer_if_started() {
  std::lock_guard g(renewer_mu_);
  abandon_inherited_renewer();
  return lease_renewer_.get();
}

}  // namespace locklab::redis
