#include "distributed/subscriber.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <initializer_list>
#include <list>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "distributed/connection.hpp"

namespace locklab::redis {

namespace {

// A command written to a pub/sub connection whose reply has not come yet.
// The server answers commands in order, so the oldest is the one the next
// reply belongs to (other than a published message, or an unasked
// SUNSUBSCRIBE on a cluster).
struct Sent {
  enum class Kind { kSubscribe, kUnsubscribe, kPing };
  Kind kind;
  std::string channel;  // empty for PING
  Subscriber::Clock::time_point at;
};

// Appends one command to the context's output buffer; false if hiredis
// cannot (out of memory).
bool append(redisContext* ctx, std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()) == REDIS_OK;
}

// cv.wait_until with a deadline that may be time_point::max().
void wait_bounded(std::condition_variable& cv, std::unique_lock<std::mutex>& g, Subscriber::Clock::time_point deadline) {
  const auto horizon = Subscriber::Clock::now() + std::chrono::hours(1);
  cv.wait_until(g, deadline < horizon ? deadline : horizon);
}

// "host:port" -> {host, port}; nullopt if it is not that.
std::optional<std::pair<std::string, int>> split_endpoint(std::string_view endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  int port = 0;
  const char* first = endpoint.data() + colon + 1;
  const char* last = endpoint.data() + endpoint.size();
  auto [p, ec] = std::from_chars(first, last, port);
  if (ec != std::errc{} || p != last || port < 1 || port > 65535) return std::nullopt;
  return std::make_pair(std::string(endpoint.substr(0, colon)), port);
}

// "MOVED 3999 127.0.0.1:6381" -> {"127.0.0.1", 6381}.
std::optional<std::pair<std::string, int>> moved_to(const std::string& text) {
  if (text.rfind("MOVED ", 0) != 0) return std::nullopt;
  const auto space = text.find(' ', 6);
  if (space == std::string::npos) return std::nullopt;
  return split_endpoint(std::string_view(text).substr(space + 1));
}

bool is_push(const Reply& r, std::string_view kind) {
  return r.is_array() && r.as_array().size() == 3 && r.as_array()[0].is_string() &&
         r.as_array()[0].as_string() == kind && r.as_array()[1].is_string();
}

}  // namespace

// One connection to one server. The reader thread alone opens, uses and
// closes `conn` (so it may use it without mu_); the rest is under mu_.
struct Subscriber::Link {
  std::string host;
  int port = 0;
  std::string endpoint;
  std::unique_ptr<detail::Connection> conn;
  std::deque<Sent> sent;  // commands awaiting their reply, oldest first
  Clock::time_point last_heard{};
  Clock::time_point next_retry{};
  bool to_write = false;       // commands appended this round
  bool append_failed = false;  // hiredis could not append (out of memory)
  // conn's descriptor, -1 while it has none: set to -1 before conn is
  // closed, so a child made by fork() at any moment closes no descriptor
  // number that was already reused.
  std::atomic<int> fd{-1};
};

struct Subscriber::Channel {
  enum class Sent { kNone, kSubscribe, kUnsubscribe };
  std::string name;
  Link* link = nullptr;        // the server it is (to be) subscribed on
  Link* moved_to = nullptr;    // MOVED while other commands of it were in flight: its next server
  int redirects = 0;           // MOVEDs followed since the last confirmation
  std::uint64_t epoch = 1;     // bumped whenever the subscription is lost
  int refs = 0;                // live Subscriptions
  std::list<Member*> members;  // the same, oldest first: who gets the next grant
  Sent last_sent = Sent::kNone;
  int outstanding = 0;  // (UN)SUBSCRIBE commands not yet acknowledged
  bool confirmed = false;
  // The server answered our SUBSCRIBE with an error (NOAUTH, NOPERM): not
  // sent again until a member asks (wait_confirmed), so a refusal is one
  // round trip, not a loop. refused_seq counts refusals, refused quotes the
  // last.
  bool refused_hold = false;
  std::uint64_t refused_seq = 0;
  std::string refused;
  // Failed attempts to open the connection this channel is routed to.
  std::uint64_t failure_seq = 0;
  std::string failure;
  Error::Kind failure_kind = Error::Kind::kConnect;  // kAuth when AUTH / SELECT was refused
  std::condition_variable state_cv;                  // members waiting for confirmation

  // A wake permit for the oldest member without one; false if every member
  // has one already (each of those leads to an attempt: nothing is lost).
  bool grant() {
    for (Member* m : members) {
      if (!m->granted) {
        m->granted = true;
        m->cv.notify_one();
        return true;
      }
    }
    return false;
  }
};

// --- Subscription ----------------------------------------------------------

Subscriber::Subscription::Subscription(Subscriber* hub, Channel* channel, std::unique_ptr<Member> me) noexcept
    : hub_(hub), channel_(channel), me_(std::move(me)) {}

Subscriber::Subscription::Subscription(Subscription&& other) noexcept
    : hub_(std::exchange(other.hub_, nullptr)),
      channel_(std::exchange(other.channel_, nullptr)),
      me_(std::move(other.me_)) {}

Subscriber::Subscription& Subscriber::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    release();
    hub_ = std::exchange(other.hub_, nullptr);
    channel_ = std::exchange(other.channel_, nullptr);
    me_ = std::move(other.me_);
  }
  return *this;
}

Subscriber::Subscription::~Subscription() { release(); }

void Subscriber::Subscription::release() noexcept {
  if (hub_ == nullptr) return;
  bool last = false;
  {
    std::lock_guard g(hub_->mu_);
    Channel& ch = *channel_;
    --ch.refs;
    ch.members.erase(me_->pos);
    // A permit this member will never use passes on: the message behind it
    // still owes the channel one attempt.
    if (me_->granted) ch.grant();
    last = ch.refs == 0;
  }
  if (last) hub_->wake_reader();
  hub_ = nullptr;
  channel_ = nullptr;
}

const std::string& Subscriber::Subscription::channel() const { return channel_->name; }

Subscriber::Wake Subscriber::Subscription::wait_until(Clock::time_point deadline) {
  std::unique_lock g(hub_->mu_);
  for (;;) {
    if (channel_->epoch != me_->epoch) return Wake::kReconnected;
    if (me_->poked) {
      me_->poked = false;
      return Wake::kPoked;
    }
    if (me_->granted) {
      me_->granted = false;
      return Wake::kMessage;
    }
    if (Clock::now() >= deadline) return Wake::kTimeout;
    wait_bounded(me_->cv, g, deadline);
  }
}

bool Subscriber::Subscription::resubscribe(Clock::time_point deadline) {
  std::unique_lock g(hub_->mu_);
  return hub_->wait_confirmed(g, *channel_, *me_, deadline);
}

void Subscriber::Subscription::poke() {
  std::lock_guard g(hub_->mu_);
  me_->poked = true;
  me_->cv.notify_one();
}

// --- Subscriber ------------------------------------------------------------

std::chrono::milliseconds Subscriber::health_check_interval(const Client::Options& options) noexcept {
  return std::max(std::chrono::milliseconds(1), options.command_timeout / 2);
}

Subscriber::Subscriber(Client::Options options, Route route)
    : options_(std::move(options)),
      sharded_(options_.cluster),
      route_(std::move(route)),
      subscribe_command_(sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE"),
      unsubscribe_command_(sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE") {
  links_.reserve(kMaxConnections);
  link_at(options_.host, options_.port);  // links_[0]
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "Subscriber: eventfd");
  reader_ = std::thread([this] { run(); });
}

Subscriber::~Subscriber() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
  }
  wake_reader();
  reader_.join();
  ::close(wake_fd_);
}

void Subscriber::close_descriptors_in_forked_child() noexcept {
  // No thread but the caller's exists here: the parent's reader left its
  // last stores in memory, and nothing else touches these descriptors.
  const std::size_t n = link_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    if (const int fd = links_[i]->fd.exchange(-1, std::memory_order_relaxed); fd >= 0) ::close(fd);
  }
  ::close(wake_fd_);
  wake_fd_ = -1;
}

void Subscriber::wake_reader() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

std::size_t Subscriber::channel_count() const {
  std::lock_guard g(mu_);
  std::size_t n = 0;
  for (const auto& [name, ch] : channels_) n += ch->refs > 0 ? 1 : 0;
  return n;
}

std::size_t Subscriber::open_connections() const {
  std::lock_guard g(mu_);
  std::size_t n = 0;
  for (const auto& link : links_) n += link->fd.load(std::memory_order_relaxed) >= 0 ? 1 : 0;
  return n;
}

Subscriber::Link* Subscriber::link_at(const std::string& host, int port) {
  const std::string endpoint = host + ":" + std::to_string(port);
  for (const auto& link : links_) {
    if (link->endpoint == endpoint) return link.get();
  }
  if (links_.size() >= kMaxConnections) return nullptr;
  auto link = std::make_unique<Link>();
  link->host = host;
  link->port = port;
  link->endpoint = endpoint;
  links_.push_back(std::move(link));  // within the reserved capacity: nothing moves
  link_count_.store(links_.size(), std::memory_order_release);
  return links_.back().get();
}

Subscriber::Link* Subscriber::route_link(const std::string& channel) {
  if (!sharded_ || !route_) return links_.front().get();
  if (const auto endpoint = split_endpoint(route_(channel))) {
    if (Link* link = link_at(endpoint->first, endpoint->second)) return link;
  }
  return links_.front().get();  // unknown: the seed answers MOVED if it is not the owner
}

bool Subscriber::serves(const Link& link) const {
  return std::any_of(channels_.begin(), channels_.end(),
                     [&](const auto& entry) { return entry.second->link == &link && entry.second->refs > 0; });
}

bool Subscriber::wait_confirmed(std::unique_lock<std::mutex>& g, Channel& ch, Member& me, Clock::time_point deadline) {
  const std::uint64_t failures_before = ch.failure_seq;
  const std::uint64_t refusals_before = ch.refused_seq;
  const auto server_bound = Clock::now() + options_.connect_timeout + options_.command_timeout;
  ch.refused_hold = false;  // a refused channel is asked for again, once per request
  if (!ch.confirmed) wake_reader();
  while (!ch.confirmed) {
    if (ch.refused_seq != refusals_before) throw Error(Error::Kind::kServer, ch.refused);
    if (ch.failure_seq != failures_before) throw Error(ch.failure_kind, ch.failure);
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now >= server_bound) {
      throw Error(Error::Kind::kTimeout,
                  "timed out after " + std::to_string((options_.connect_timeout + options_.command_timeout).count()) +
                      " ms waiting for " + ch.link->endpoint + " to confirm " + subscribe_command_ + " " + ch.name);
    }
    wait_bounded(ch.state_cv, g, deadline < server_bound ? deadline : server_bound);
  }
  me.epoch = ch.epoch;
  me.poked = false;
  return true;
}

Subscriber::Subscription Subscriber::enroll(Channel& ch) {
  // The two allocations first: if either throws, the channel is unchanged.
  auto me = std::make_unique<Member>();
  me->pos = ch.members.insert(ch.members.end(), me.get());
  me->ahead = static_cast<std::size_t>(ch.refs);
  ++ch.refs;
  return Subscription(this, &ch, std::move(me));
}

std::optional<Subscriber::Subscription> Subscriber::subscribe(const std::string& channel, Clock::time_point deadline) {
  std::optional<Subscription> s;  // before g: leaving the channel takes mu_, so g must go first
  std::unique_lock g(mu_);
  auto it = channels_.find(channel);
  if (it == channels_.end()) {
    // Built before it is inserted: if an allocation throws, channels_ holds
    // no empty slot for the reader thread to dereference.
    auto fresh = std::make_unique<Channel>();
    fresh->name = channel;
    fresh->link = route_link(channel);
    it = channels_.emplace(channel, std::move(fresh)).first;
  }
  Channel& ch = *it->second;
  s.emplace(enroll(ch));
  if (!wait_confirmed(g, ch, *s->me_, deadline)) return std::nullopt;
  return s;
}

std::optional<Subscriber::Subscription> Subscriber::join_if_subscribed(const std::string& channel) {
  std::lock_guard g(mu_);
  auto it = channels_.find(channel);
  if (it == channels_.end() || !it->second->confirmed) return std::nullopt;
  Subscription s = enroll(*it->second);
  s.me_->epoch = it->second->epoch;
  return s;
}

void Subscriber::channel_lost(Channel& ch) {
  ++ch.epoch;
  ch.confirmed = false;
  ch.last_sent = Channel::Sent::kNone;
  ch.outstanding = 0;
  if (ch.moved_to != nullptr) ch.link = std::exchange(ch.moved_to, nullptr);
  for (Member* m : ch.members) {
    m->granted = false;  // every member gets kReconnected and attempts again
    m->cv.notify_one();
  }
  ch.state_cv.notify_all();
}

void Subscriber::drop(Link& link) {
  link.fd.store(-1, std::memory_order_relaxed);
  link.conn.reset();
  link.sent.clear();
  link.next_retry = Clock::now();
  for (auto& [name, ch] : channels_) {
    if (ch->link == &link) channel_lost(*ch);
  }
}

void Subscriber::on_reply(Link& link, const Reply& r) {
  if (is_push(r, sharded_ ? "smessage" : "message")) {
    messages_.fetch_add(1, std::memory_order_relaxed);
    auto it = channels_.find(r.as_array()[1].as_string());
    if (it != channels_.end()) it->second->grant();
    return;
  }
  // A cluster master that loses a slot (resharding, failover) tells every
  // shard subscriber of its channels with an SUNSUBSCRIBE nobody sent.
  if (sharded_ && is_push(r, "sunsubscribe")) {
    const std::string& name = r.as_array()[1].as_string();
    const bool asked = !link.sent.empty() && link.sent.front().kind == Sent::Kind::kUnsubscribe &&
                       link.sent.front().channel == name;
    if (!asked) {
      auto it = channels_.find(name);
      if (it != channels_.end() && it->second->link == &link) {
        Channel& ch = *it->second;
        channel_lost(ch);
        ch.link = route_link(ch.name);  // the map may be stale: a MOVED then corrects it
        redirects_.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
  }
  // Anything else answers the oldest command in flight on this connection.
  if (link.sent.empty()) return;
  const Sent cmd = std::move(link.sent.front());
  link.sent.pop_front();
  if (cmd.kind == Sent::Kind::kPing) return;  // an answer, even an error: the server lives
  auto it = channels_.find(cmd.channel);
  if (it == channels_.end()) return;
  Channel& ch = *it->second;
  if (ch.outstanding > 0) --ch.outstanding;
  if (r.is_error()) {
    const auto moved = sharded_ && cmd.kind == Sent::Kind::kSubscribe ? moved_to(r.as_string()) : std::nullopt;
    Link* next = moved && ch.redirects < kMaxRedirects ? link_at(moved->first, moved->second) : nullptr;
    if (next != nullptr) {
      // The slot map was stale: subscribe where the cluster says.
      ++ch.redirects;
      redirects_.fetch_add(1, std::memory_order_relaxed);
      ch.moved_to = next;
    } else if (cmd.kind == Sent::Kind::kSubscribe) {
      // Refused: the channel is not subscribed on the server. Its waiters
      // get the server's words (wait_confirmed); it is not sent again
      // until one of them asks.
      ch.refused = link.endpoint + " replied to " + subscribe_command_ + " " + ch.name + ": " + r.as_string();
      if (moved) ch.refused += " (after " + std::to_string(ch.redirects) + " MOVED replies for this channel)";
      ch.redirects = 0;
      ++ch.refused_seq;
      ch.refused_hold = true;
    }
    if (ch.outstanding == 0) {  // no later (UN)SUBSCRIBE of this channel in flight
      ch.last_sent = Channel::Sent::kNone;
      ch.confirmed = false;
      if (ch.moved_to != nullptr) ch.link = std::exchange(ch.moved_to, nullptr);
    }
    ch.state_cv.notify_all();
    return;
  }
  ch.confirmed = ch.last_sent == Channel::Sent::kSubscribe && ch.outstanding == 0;
  if (ch.confirmed) {
    ch.redirects = 0;
    ch.state_cv.notify_all();
  }
}

void Subscriber::run() {
  const auto ping_after = health_check_interval(options_);
  const auto reply_bound = options_.command_timeout;
  std::unique_lock g(mu_);
  while (!stop_) {
    // Connect: one server at a time that has channels to serve.
    Link* to_open = nullptr;
    for (const auto& link : links_) {
      if (!link->conn && Clock::now() >= link->next_retry && serves(*link)) {
        to_open = link.get();
        break;
      }
    }
    if (to_open != nullptr) {
      Client::Options target = options_;
      target.host = to_open->host;
      target.port = to_open->port;
      g.unlock();
      std::unique_ptr<detail::Connection> conn;
      std::string error;
      Error::Kind kind = Error::Kind::kConnect;
      try {
        conn = detail::Connection::open(target);
      } catch (const Error& e) {
        error = e.what();
        kind = e.kind();
      }
      g.lock();
      if (!conn) {
        to_open->next_retry = Clock::now() + std::chrono::milliseconds(100);
        for (auto& [name, ch] : channels_) {
          if (ch->link != to_open) continue;
          ch->failure = "pub/sub connection: " + error;
          ch->failure_kind = kind;
          ++ch->failure_seq;
          ch->state_cv.notify_all();
        }
      } else {
        to_open->conn = std::move(conn);
        to_open->fd.store(to_open->conn->fd(), std::memory_order_relaxed);
        to_open->last_heard = Clock::now();
      }
      continue;
    }

    // The health check: a connection that has had no reply to a command
    // for reply_bound is dead (a stopped or partitioned server sends no
    // FIN, so poll() alone would never tell).
    bool dropped = false;
    for (const auto& link : links_) {
      if (link->conn && !link->sent.empty() && Clock::now() - link->sent.front().at >= reply_bound) {
        drop(*link);
        dropped = true;
      }
    }
    if (dropped) continue;

    // What to (un)subscribe, one command per channel (a refusal then names
    // its channel); forget channels nobody uses any more.
    const auto now = Clock::now();
    auto send = [&](Link& link, Sent::Kind kind, const char* command, const std::string& channel) {
      link.append_failed = link.append_failed || !append(link.conn->context(), {command, channel});
      if (kind != Sent::Kind::kPing) commands_sent_.fetch_add(1, std::memory_order_relaxed);
      link.sent.push_back({kind, channel, now});
      link.to_write = true;
    };
    for (auto it = channels_.begin(); it != channels_.end();) {
      Channel& ch = *it->second;
      Link& link = *ch.link;
      if (link.conn && ch.refs > 0 && ch.last_sent != Channel::Sent::kSubscribe && !ch.refused_hold) {
        send(link, Sent::Kind::kSubscribe, subscribe_command_, ch.name);
        ch.last_sent = Channel::Sent::kSubscribe;
        ++ch.outstanding;
        ch.confirmed = false;
      } else if (link.conn && ch.refs == 0 && ch.last_sent == Channel::Sent::kSubscribe) {
        send(link, Sent::Kind::kUnsubscribe, unsubscribe_command_, ch.name);
        ch.last_sent = Channel::Sent::kUnsubscribe;
        ++ch.outstanding;
        ch.confirmed = false;
      }
      if (ch.refs == 0 && ch.outstanding == 0 && ch.last_sent != Channel::Sent::kSubscribe) {
        it = channels_.erase(it);
      } else {
        ++it;
      }
    }
    // Quiet for ping_after with nothing in flight: ask (PING is allowed in
    // subscribed mode; the reply is ["pong", ""], or +PONG outside it).
    for (const auto& link : links_) {
      if (link->conn && link->sent.empty() && now - link->last_heard >= ping_after) {
        link->append_failed = link->append_failed || !append(link->conn->context(), {"PING"});
        link->sent.push_back({Sent::Kind::kPing, {}, now});
        link->to_write = true;
      }
    }
    std::vector<Link*> writers;
    for (const auto& link : links_) {
      if (link->to_write) writers.push_back(link.get());
    }
    bool failed = false;
    for (Link* link : writers) {
      link->to_write = false;
      bool ok = !std::exchange(link->append_failed, false);
      g.unlock();
      int done = 0;
      while (ok && done == 0) ok = redisBufferWrite(link->conn->context(), &done) == REDIS_OK;
      g.lock();
      if (!ok) {
        drop(*link);
        failed = true;
      }
    }
    if (failed) continue;

    // A bounded poll: until the next PING is due or the oldest command's
    // reply is overdue on some connection, or the next connect attempt.
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    std::vector<Link*> polled;
    auto wake_at = Clock::time_point::max();
    for (const auto& link : links_) {
      if (link->conn) {
        fds.push_back({link->conn->fd(), POLLIN, 0});
        polled.push_back(link.get());
        wake_at = std::min(wake_at, link->sent.empty() ? link->last_heard + ping_after : link->sent.front().at + reply_bound);
      } else if (serves(*link)) {
        wake_at = std::min(wake_at, link->next_retry);
      }
    }
    const int timeout_ms =
        wake_at == Clock::time_point::max()
            ? -1
            : static_cast<int>(std::clamp<std::int64_t>(
                  std::chrono::ceil<std::chrono::milliseconds>(wake_at - Clock::now()).count() + 1, 0, 60'000));
    g.unlock();
    ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout_ms);
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t drained = 0;
      [[maybe_unused]] auto n = ::read(wake_fd_, &drained, sizeof drained);
    }
    // Read without mu_: only this thread touches a link's connection.
    std::vector<std::vector<Reply>> replies(polled.size());
    std::vector<char> broken(polled.size(), 0);
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      redisContext* ctx = polled[i]->conn->context();
      if (redisBufferRead(ctx) != REDIS_OK) {
        broken[i] = 1;
        continue;
      }
      for (;;) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(ctx, &raw) != REDIS_OK) {
          broken[i] = 1;
          break;
        }
        if (raw == nullptr) break;
        replies[i].push_back(detail::Connection::convert(raw));
        freeReplyObject(raw);
      }
    }
    g.lock();
    for (std::size_t i = 0; i < polled.size(); ++i) {
      Link& link = *polled[i];
      if (!replies[i].empty()) link.last_heard = Clock::now();
      for (const Reply& r : replies[i]) on_reply(link, r);
      if (broken[i] != 0) drop(link);
    }
  }
  for (const auto& link : links_) link->fd.store(-1, std::memory_order_relaxed);  // the connections close as this returns
}

}  // namespace locklab::redis
