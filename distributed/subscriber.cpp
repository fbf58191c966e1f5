#include "distributed/subscriber.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <list>
#include <string_view>
#include <system_error>
#include <vector>

#include "distributed/connection.hpp"

namespace locklab::redis {

struct Subscriber::Channel {
  enum class Sent { kNone, kSubscribe, kUnsubscribe };
  std::string name;
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
  std::condition_variable state_cv;  // members waiting for confirmation

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

namespace {

// A command written to the pub/sub connection whose reply has not come yet.
// The server answers commands in order, so the oldest is the one the next
// reply (other than a published message) belongs to.
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

}  // namespace

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
    if (hub_->epoch_ != me_->epoch) return Wake::kReconnected;
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

Subscriber::Subscriber(Client::Options options) : options_(std::move(options)) {
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
  // last store in memory, and nothing else touches these descriptors.
  if (const int fd = connection_fd_.exchange(-1, std::memory_order_relaxed); fd >= 0) ::close(fd);
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

bool Subscriber::wait_confirmed(std::unique_lock<std::mutex>& g, Channel& ch, Member& me, Clock::time_point deadline) {
  const std::uint64_t errors_before = error_seq_;
  const std::uint64_t refusals_before = ch.refused_seq;
  const auto server_bound = Clock::now() + options_.connect_timeout + options_.command_timeout;
  ch.refused_hold = false;  // a refused channel is asked for again, once per request
  if (!ch.confirmed) wake_reader();
  while (!ch.confirmed) {
    if (ch.refused_seq != refusals_before) throw Error(Error::Kind::kServer, ch.refused);
    if (error_seq_ != errors_before) throw Error(last_error_kind_, last_error_);
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now >= server_bound) {
      throw Error(Error::Kind::kTimeout, "timed out after " +
                                             std::to_string((options_.connect_timeout + options_.command_timeout).count()) +
                                             " ms waiting for " + options_.endpoint() + " to confirm SUBSCRIBE " + ch.name);
    }
    wait_bounded(ch.state_cv, g, deadline < server_bound ? deadline : server_bound);
  }
  me.epoch = epoch_;
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
  s.me_->epoch = epoch_;
  return s;
}

void Subscriber::connection_lost() {
  ++epoch_;
  for (auto& [name, ch] : channels_) {
    ch->confirmed = false;
    ch->last_sent = Channel::Sent::kNone;
    ch->outstanding = 0;
    for (Member* m : ch->members) {
      m->granted = false;  // every member gets kReconnected and attempts again
      m->cv.notify_one();
    }
    ch->state_cv.notify_all();
  }
}

void Subscriber::run() {
  std::unique_ptr<detail::Connection> conn;
  std::deque<Sent> sent;  // commands awaiting their reply, oldest first
  auto last_heard = Clock::now();
  auto next_retry = Clock::now();
  const auto ping_after = health_check_interval(options_);
  const auto reply_bound = options_.command_timeout;
  // Drops the connection; every member is told (kReconnected).
  auto drop = [&] {
    connection_fd_.store(-1, std::memory_order_relaxed);
    conn.reset();
    sent.clear();
    connection_lost();
    next_retry = Clock::now();
  };
  std::unique_lock g(mu_);
  while (!stop_) {
    bool wanted = false;
    for (const auto& [name, ch] : channels_) wanted = wanted || ch->refs > 0;

    if (!conn && wanted && Clock::now() >= next_retry) {
      g.unlock();
      std::string error;
      Error::Kind kind = Error::Kind::kConnect;
      try {
        conn = detail::Connection::open(options_);
      } catch (const Error& e) {
        error = e.what();
        kind = e.kind();
      }
      g.lock();
      if (!conn) {
        last_error_ = "pub/sub connection: " + error;
        last_error_kind_ = kind;
        ++error_seq_;
        next_retry = Clock::now() + std::chrono::milliseconds(100);
        for (auto& [name, ch] : channels_) ch->state_cv.notify_all();
      } else {
        connection_fd_.store(conn->fd(), std::memory_order_relaxed);
        last_heard = Clock::now();
      }
      continue;
    }

    // The health check: a connection that has had no reply to a command
    // for reply_bound is dead (a stopped or partitioned server sends no
    // FIN, so poll() alone would never tell).
    if (conn && !sent.empty() && Clock::now() - sent.front().at >= reply_bound) {
      drop();
      continue;
    }

    // What to (un)subscribe, one command per channel (a refusal then names
    // its channel); forget channels nobody uses any more.
    bool ok = true;
    bool wrote = false;
    const auto now = Clock::now();
    for (auto it = channels_.begin(); it != channels_.end();) {
      Channel& ch = *it->second;
      if (conn && ch.refs > 0 && ch.last_sent != Channel::Sent::kSubscribe && !ch.refused_hold) {
        ok = ok && append(conn->context(), {"SUBSCRIBE", ch.name});
        commands_sent_.fetch_add(1, std::memory_order_relaxed);
        sent.push_back({Sent::Kind::kSubscribe, ch.name, now});
        ch.last_sent = Channel::Sent::kSubscribe;
        ++ch.outstanding;
        ch.confirmed = false;
        wrote = true;
      } else if (conn && ch.refs == 0 && ch.last_sent == Channel::Sent::kSubscribe) {
        ok = ok && append(conn->context(), {"UNSUBSCRIBE", ch.name});
        commands_sent_.fetch_add(1, std::memory_order_relaxed);
        sent.push_back({Sent::Kind::kUnsubscribe, ch.name, now});
        ch.last_sent = Channel::Sent::kUnsubscribe;
        ++ch.outstanding;
        ch.confirmed = false;
        wrote = true;
      }
      if (ch.refs == 0 && ch.outstanding == 0 && ch.last_sent != Channel::Sent::kSubscribe) {
        it = channels_.erase(it);
      } else {
        ++it;
      }
    }
    // Quiet for ping_after with nothing in flight: ask (PING is allowed in
    // subscribed mode; the reply is ["pong", ""], or +PONG outside it).
    if (conn && sent.empty() && now - last_heard >= ping_after) {
      ok = ok && append(conn->context(), {"PING"});
      sent.push_back({Sent::Kind::kPing, {}, now});
      wrote = true;
    }
    if (conn && wrote) {
      g.unlock();
      int done = 0;
      while (ok && done == 0) ok = redisBufferWrite(conn->context(), &done) == REDIS_OK;
      g.lock();
      if (!ok) {
        drop();
        continue;
      }
    }

    // A bounded poll: until the next PING is due or the oldest command's
    // reply is overdue, or the next connect attempt.
    int timeout_ms = -1;
    auto until_ms = [](Clock::time_point t) {
      return static_cast<int>(std::clamp<std::int64_t>(
          std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count() + 1, 0, 60'000));
    };
    if (conn) {
      timeout_ms = until_ms(sent.empty() ? last_heard + ping_after : sent.front().at + reply_bound);
    } else if (wanted) {
      timeout_ms = until_ms(next_retry);
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {conn ? conn->fd() : -1, POLLIN, 0}};
    g.unlock();
    ::poll(fds, 2, timeout_ms);
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t drained = 0;
      [[maybe_unused]] auto n = ::read(wake_fd_, &drained, sizeof drained);
    }
    std::vector<Reply> replies;
    bool broken = false;
    if (conn && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      if (redisBufferRead(conn->context()) != REDIS_OK) {
        broken = true;
      } else {
        for (;;) {
          void* raw = nullptr;
          if (redisGetReplyFromReader(conn->context(), &raw) != REDIS_OK) {
            broken = true;
            break;
          }
          if (raw == nullptr) break;
          replies.push_back(detail::Connection::convert(raw));
          freeReplyObject(raw);
        }
      }
    }
    g.lock();
    if (!replies.empty()) last_heard = Clock::now();
    for (const Reply& r : replies) {
      const bool message = r.is_array() && r.as_array().size() == 3 && r.as_array()[0].is_string() &&
                           r.as_array()[0].as_string() == "message" && r.as_array()[1].is_string();
      if (message) {
        messages_.fetch_add(1, std::memory_order_relaxed);
        auto it = channels_.find(r.as_array()[1].as_string());
        if (it != channels_.end()) it->second->grant();
        continue;
      }
      // Anything else answers the oldest command in flight.
      if (sent.empty()) continue;
      const Sent cmd = std::move(sent.front());
      sent.pop_front();
      if (cmd.kind == Sent::Kind::kPing) continue;  // an answer, even an error: the server lives
      auto it = channels_.find(cmd.channel);
      if (it == channels_.end()) continue;
      Channel& ch = *it->second;
      if (ch.outstanding > 0) --ch.outstanding;
      if (r.is_error()) {
        // Refused: the channel is not subscribed on the server. Its waiters
        // get the server's words (wait_confirmed); it is not sent again
        // until one of them asks.
        if (cmd.kind == Sent::Kind::kSubscribe) {
          ch.refused = options_.endpoint() + " replied to SUBSCRIBE " + ch.name + ": " + r.as_string();
          ++ch.refused_seq;
          ch.refused_hold = true;
        }
        if (ch.outstanding == 0) {  // no later (UN)SUBSCRIBE of this channel in flight
          ch.last_sent = Channel::Sent::kNone;
          ch.confirmed = false;
        }
        ch.state_cv.notify_all();
        continue;
      }
      ch.confirmed = ch.last_sent == Channel::Sent::kSubscribe && ch.outstanding == 0;
      if (ch.confirmed) ch.state_cv.notify_all();
    }
    if (broken) drop();
  }
  connection_fd_.store(-1, std::memory_order_relaxed);  // conn closes as this returns
}

}  // namespace locklab::redis
