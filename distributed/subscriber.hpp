// subscriber.hpp — one shared pub/sub connection per Client (per master on
// a Redis Cluster), multiplexing every channel this process's lock waiters
// listen on (Redisson's
// PublishSubscribeService idea): 50 threads waiting for one lock are one
// SUBSCRIBE on one connection, and a release message wakes exactly ONE of
// them, not all 50.
//
// The protocol a waiter follows (PubSubLock, AdaptiveLock)
// --------------------------------------------------------
//   1. s = subscribe(channel, deadline)   // or join_if_subscribed(channel)
//   2. attempt the lock                   // AFTER the subscription is live
//   3. s.wait_until(min(deadline, lease)) // a permit, a timeout, a reconnect
//   4. back to 2
// subscribe() returns only once the server has confirmed the SUBSCRIBE (or
// the channel was already confirmed for another waiter: then it costs no
// round trip). So any release that happens after step 2 started is published
// to a connection that is already listening, and no release between "my
// attempt failed" and "I am listening" can be missed — the Redisson bug
// where such a waiter sleeps a whole lease.
//
// Wake-one: permits, not broadcasts, oldest member first
// -----------------------------------------------------
// A message grants one *wake permit* to the oldest member of the channel
// that holds none (members are kept in the order they joined), and wakes
// that member's thread (a condition variable per member, so the wake-up
// reaches the thread the permit is for, and no other). It consumes the
// permit and attempts the lock. If that attempt fails
// (another process or a barging newcomer won), the member keeps its place
// at the front, so the next message is its again: a waiter that loses a
// race is not sent to the back, which is what bounds the tail latency. Lost
// wake-ups are impossible: a permit granted while its member is not waiting
// stays until it waits (it then attempts at once); a member that leaves
// with an unused permit passes it to the next; and a message is dropped
// only when every member already holds a permit, each of which leads to an
// attempt after the dropped message arrived.
//
// Failure modes
// -------------
// - Connection lost (server killed or restarted): every wait_until returns
//   kReconnected; the waiter calls resubscribe(deadline), which waits for
//   the reader thread to reconnect and re-subscribe, or throws Error
//   (kConnect with the reason, or kTimeout). Then it attempts the lock
//   again: a release that happened while nobody listened is caught by that
//   attempt.
// - Server unreachable when subscribing: subscribe() throws the connect
//   error as soon as the reader thread's attempt fails (within the
//   Client's connect_timeout), not at the deadline; Error(kAuth) if the
//   connection's AUTH or SELECT is refused.
// - The server refuses a SUBSCRIBE: NOAUTH (it wants a password the
//   options lack) or NOPERM (an ACL user without that channel; Redis 7's
//   default acl-pubsub-default resetchannels gives a new user none).
//   subscribe() / resubscribe() throw Error(kServer) quoting the server as
//   soon as the refusal arrives (one round trip), not a timeout. Each
//   channel is subscribed with its own command, so a refusal names exactly
//   one channel; a refused channel is asked for again only when a member
//   next calls subscribe() or resubscribe() (no retry loop).
// - A half-open connection (the server stopped, its host frozen, a
//   partition: no FIN, so the socket never reports a hang-up): the reader
//   polls with a bound, sends PING (allowed in subscribed mode) after
//   health_check_interval() = command_timeout / 2 without hearing from the
//   server, and drops the connection when any command — PING, SUBSCRIBE,
//   UNSUBSCRIBE — has had no reply for command_timeout. So a dead peer is
//   noticed within 1.5 x command_timeout, every member's wait_until returns
//   kReconnected, and resubscribe() then reconnects or throws (kConnect,
//   kTimeout) within connect_timeout + command_timeout. No waiter sleeps
//   on a dead connection until the holder's lease or forever.
// - A silent publisher (holder crashed): no message ever comes; waiters use
//   the remaining lease as their wait bound and attempt again.
//
// On a Redis Cluster: sharded pub/sub, one connection per master
// ----------------------------------------------------------------
// With Client::Options::cluster the Subscriber listens with SSUBSCRIBE /
// SUNSUBSCRIBE (Redis >= 7.0) and receives "smessage"s: the locks' scripts
// publish with SPUBLISH there (publishing_script.hpp says why). A sharded
// channel lives on the master that owns its hash slot, so each channel is
// subscribed on that master, found with the Client's slot map (the `route`
// given to the constructor), and the Subscriber keeps one connection per
// master it has channels on — still one reader thread for all of them.
// What the cluster may answer:
// - MOVED <slot> <host:port> to an SSUBSCRIBE (the map was stale): the
//   channel is subscribed again on the master named, at most
//   kMaxRedirects times in a row (then the waiters get Error(kServer)
//   quoting the last MOVED and the count, as for a refusal); its waiters
//   see nothing but a later confirmation.
// - An unasked ["sunsubscribe", channel] (the slot left this master: a
//   resharding, a failover): the channel is routed again and re-subscribed,
//   and its members get kReconnected, as after a lost connection (a release
//   in between may have been missed: the waiter attempts again).
// - ASK / TRYAGAIN (a slot in the middle of a migration) are refusals.
// A lost connection to one master disturbs only the channels on it. On one
// server (standalone, Sentinel) nothing changes: one connection, SUBSCRIBE.
//
// What it costs
// -------------
// One thread per Client, started on first use; one connection (one per
// master with channels on a cluster), and one PING per
// health_check_interval() on each that is quiet (one that receives
// messages is not pinged). A first
// subscription to a channel costs one SUBSCRIBE round trip on that
// connection (counted in commands_sent()); further waiters on the same
// channel cost none; the last one leaving sends UNSUBSCRIBE. A message costs
// one mutex lock and one condition-variable notify in this process.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distributed/client.hpp"

namespace locklab::redis {

class Subscriber {
 public:
  using Clock = std::chrono::steady_clock;
  // Cluster only: "host:port" of the master that owns `channel`'s hash slot
  // now, or "" if unknown (then the seed, which answers MOVED if it is not).
  using Route = std::function<std::string(const std::string& channel)>;

  // MOVED replies followed for one channel in a row before its waiters get
  // Error(kServer): the ClusterRouter's bound (kMaxRedirects) and reason.
  static constexpr int kMaxRedirects = 5;
  // The most servers one Subscriber connects to: the Redis Cluster
  // specification's design goal is linear scaling up to 1,000 nodes. The
  // connection slots are reserved up front so that a child made by fork()
  // can close them all (links_ below); a MOVED to a server past the limit
  // is a refusal.
  static constexpr std::size_t kMaxConnections = 1000;

  // Why wait_until returned.
  enum class Wake {
    kMessage,      // a release message (one permit consumed): attempt now
    kTimeout,      // the deadline passed
    kPoked,        // poke() was called
    kReconnected,  // the connection was lost; call resubscribe() first
  };

 private:
  struct Channel;
  struct Member {
    bool poked = false;
    bool granted = false;     // holds a wake permit (see "Wake-one")
    std::uint64_t epoch = 0;  // the channel's subscription epoch this member is live on
    std::size_t ahead = 0;    // members of the channel when this one joined
    std::list<Member*>::iterator pos;  // in Channel::members
    std::condition_variable cv;        // wait_until sleeps here: a grant wakes this member only
  };

 public:
  // One member of one channel: counts as a waiter for wake permits from its
  // construction to its destruction. Movable, not copyable. Must not
  // outlive its Subscriber.
  class Subscription {
   public:
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    // Leaves the channel; the last member's leaving unsubscribes it.
    ~Subscription();

    const std::string& channel() const;

    // Blocks until a wake permit is available (consumes it: kMessage), this
    // member was poked (kPoked), the connection was lost since this member
    // became live (kReconnected), or `deadline` (kTimeout). A past deadline
    // still reports a permit already available. Never throws.
    Wake wait_until(Clock::time_point deadline);

    // After kReconnected: waits until the channel is subscribed on the new
    // connection; then this member is live again and true is returned.
    // False if `deadline` passed first (the caller's own wait budget).
    // Throws Error(kConnect) (kAuth: AUTH / SELECT refused) with the
    // reader's connect error as soon as a reconnect attempt fails,
    // Error(kServer) quoting the server at once if it refuses the
    // SUBSCRIBE, Error(kTimeout) if the server has not confirmed within
    // connect_timeout + command_timeout (whatever the deadline).
    bool resubscribe(Clock::time_point deadline);

    // How many members the channel had when this one joined: 0 when it was
    // the first (it then subscribed, or re-joined a channel everyone had
    // just left). Members are served oldest first (see "Wake-one").
    std::size_t ahead() const noexcept { return me_->ahead; }

    // Makes the current or next wait_until of this member return kPoked.
    // Thread-safe (another thread may call it).
    void poke();

   private:
    friend class Subscriber;
    Subscription(Subscriber* hub, Channel* channel, std::unique_ptr<Member> me) noexcept;
    void release() noexcept;

    Subscriber* hub_ = nullptr;
    Channel* channel_ = nullptr;
    std::unique_ptr<Member> me_;
  };

  // Starts the reader thread; connects lazily on the first subscribe(), to
  // options.host:port; with options.cluster (sharded pub/sub) each channel
  // to the master `route` names for it (none given: the seed, then MOVED).
  explicit Subscriber(Client::Options options, Route route = {});
  // Pre: no Subscription is alive. Stops the thread, closes the connection.
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Joins `channel`, subscribing it on the server if this process does not
  // listen to it yet, and returns once the server has confirmed it (at once,
  // without a round trip, if it already was). nullopt if `deadline` (the
  // caller's wait budget) passed first. Throws Error(kConnect) as soon as
  // the connection cannot be opened (kAuth: its AUTH / SELECT refused),
  // Error(kServer) quoting the server as soon as it refuses the SUBSCRIBE
  // (NOAUTH, NOPERM), Error(kTimeout) if the server has not confirmed
  // within connect_timeout + command_timeout.
  std::optional<Subscription> subscribe(const std::string& channel, Clock::time_point deadline);

  // Joins `channel` only if it is already confirmed on the server (another
  // waiter of this process listens to it): never a round trip, never
  // blocks. nullopt otherwise.
  std::optional<Subscription> join_if_subscribed(const std::string& channel);

  // Only in a child made by fork() from the process that built this object,
  // where the reader thread does not exist: closes the child's copies of
  // the pub/sub socket and of the reader's wake-up descriptor, sending
  // nothing (the parent's connection stays subscribed). Afterwards the
  // object must be neither used nor destroyed (its std::thread can be
  // neither joined nor detached there): Client sets it aside.
  void close_descriptors_in_forked_child() noexcept;

  // SUBSCRIBE + UNSUBSCRIBE (on a cluster SSUBSCRIBE + SUNSUBSCRIBE)
  // commands sent so far, on every connection (each names one channel).
  std::uint64_t commands_sent() const noexcept { return commands_sent_.load(std::memory_order_relaxed); }
  // Messages received so far, on any channel.
  std::uint64_t messages_received() const noexcept { return messages_.load(std::memory_order_relaxed); }
  // Channels with at least one live Subscription.
  std::size_t channel_count() const;
  // Pub/sub connections open now (on a cluster: one per master in use).
  std::size_t open_connections() const;
  // True when listening sharded (SSUBSCRIBE): options.cluster.
  bool sharded() const noexcept { return sharded_; }
  // Cluster only: MOVED replies followed and unasked SUNSUBSCRIBEs (a slot
  // that moved away) handled so far.
  std::uint64_t redirects() const noexcept { return redirects_.load(std::memory_order_relaxed); }

  // How long the pub/sub connection may be quiet before the reader asks
  // with a PING: options.command_timeout / 2 (see "Failure modes").
  static std::chrono::milliseconds health_check_interval(const Client::Options& options) noexcept;

 private:
  struct Link;  // one connection to one server

  // Adds a member at the back of `ch`. Pre: mu_ held.
  Subscription enroll(Channel& ch);
  void run();
  void wake_reader() noexcept;
  bool wait_confirmed(std::unique_lock<std::mutex>& g, Channel& ch, Member& me, Clock::time_point deadline);
  // The helpers below: pre mu_ held.
  // The link to host:port, made if new; nullptr past kMaxConnections.
  Link* link_at(const std::string& host, int port);
  // Where `channel` is to be subscribed: its master (route_), else the seed.
  Link* route_link(const std::string& channel);
  // The channel's subscription is gone (its connection dropped, its slot
  // moved): every member gets kReconnected, the reader subscribes again.
  void channel_lost(Channel& ch);
  // Reader thread: closes `link`'s connection; its channels are lost.
  void drop(Link& link);
  // Reader thread: one reply or message read on `link`.
  void on_reply(Link& link, const Reply& r);
  bool serves(const Link& link) const;

  Client::Options options_;
  const bool sharded_;
  const Route route_;
  const char* const subscribe_command_;    // SUBSCRIBE or SSUBSCRIBE
  const char* const unsubscribe_command_;  // UNSUBSCRIBE or SUNSUBSCRIBE
  int wake_fd_ = -1;  // eventfd: wakes the reader's poll()

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Channel>> channels_;
  // links_[0] is options.host:port (the server, or the cluster's seed).
  // Reserved for kMaxConnections at construction and only appended to, so
  // its storage never moves; link_count_ is published after each append:
  // a child made by fork() at any moment reads a complete prefix.
  std::vector<std::unique_ptr<Link>> links_;
  std::atomic<std::size_t> link_count_{0};
  bool stop_ = false;

  std::atomic<std::uint64_t> redirects_{0};
  std::atomic<std::uint64_t> commands_sent_{0};
  std::atomic<std::uint64_t> messages_{0};
  std::thread reader_;
};

}  // namespace locklab::redis
