// fencing.hpp — fencing tokens: the cure for a lease that ran out under its
// holder. A monotonically increasing number per lock name, issued by Redis
// INCR at acquire time, carried by the holder to the resource, which
// rejects any write whose token is not larger than the last one it
// accepted.
//
// Why a lock alone is not enough
// ------------------------------
// A Redis lock is a lease (lock_lost.hpp): the holder cannot know that it
// expired. A GC-like pause, SIGSTOP, a swapped-out process or a slow disk
// between "I hold the lock" and "I write" lets the lease run out, another
// client acquire, and then both write. Checking the lease before the write
// does not help: the pause can fall between the check and the write. Only
// the resource, which sees the writes in their real order, can refuse the
// late one (Kleppmann, "How to do distributed locking", 2016).
//
// The protocol
// ------------
//   acquire (every lock built with Options::fenced, 1 round trip per attempt
//   as without it: the INCR rides the script that grants ownership):
//     if <the lock's own ownership test> then
//       t = INCR <name>~fence; <its ownership write>
//       return {acquired, t}                    -- the token, same round trip
//     else return {not acquired, PTTL <name>}
//   write (FencedResource, 1 round trip, one Lua script on a hash <res>):
//     if token > HGET <res> token then HSET <res> value v token t;
//       HINCRBY <res> accepted 1; return {1, t}
//     else HINCRBY <res> rejected 1; return {0, highest}
// Tokens come from the lock's own INCR inside the script that takes the
// lock, as Redisson's RFencedLock does, so a token costs no extra round trip
// and two holders can never get the same one: the ownership write and the
// INCR run in one script, atomically, so token order IS acquisition order.
// The first token of a fresh counter is 1. The INCR runs before the script
// writes the lock key: a counter holding a foreign value (WRONGTYPE, not an
// integer) fails the acquire with nothing taken, as Redis does not roll a
// script back.
//
// Tokens on every lock type
// -------------------------
// One counter per lock NAME, `<name>~fence` (FencingTokens::key_for,
// lock_keys.hpp), the same for every lock type, so a FencedResource checks
// holders of a SpinLock, PubSubLock, AdaptiveLock or FairLock alike, and
// FencingTokens::current() is the last token any of them issued. Each lock
// takes `Options::fenced` (default false: the protocol, keys and commands
// are exactly the unfenced ones, no counter key is created) and offers the
// same three members: token() (the calling thread's token, valid while it
// holds the lock), fence_key() and fenced(). Where the INCR sits:
//   SpinLock      the attempt becomes one script: SET NX PX, INCR on success
//                 (instead of a bare SET NX: still 1 round trip)
//   AdaptiveLock  the same script for the spinning attempts and the parked
//                 ones (its park script already was a script)
//   PubSubLock    the acquire script INCRs when the hold count becomes 1 (an
//                 outermost acquisition); re-entry keeps the outer token
//   FairLock      the script that makes a thread the owner INCRs for it: the
//                 acquire script when it takes a free lock itself, and the
//                 hand-off (in release, leave, or an acquire finding a dead
//                 holder) for the waiter it hands to, pushing the token as
//                 the element of that waiter's wake list: the BLPOP that
//                 wakes it delivers it. A waiter asks for a token in its
//                 queue entry, so the hand-off follows the WAITER's
//                 `fenced`, whatever the releaser's.
//   FencedSpinLock  SpinLock with fenced on, whose try_acquire returns the
//                 token (kept for its callers; it is a thin wrapper).
// token() keeps answering until unlock(), even after the lease ran out:
// the holder cannot know, which is the point; the resource decides. An
// acquisition by an UNFENCED object of the same name issues no token, so a
// stale fenced holder's token may still be the highest when it writes:
// fencing protects a resource only if every writer holds a fenced lock.
//
// The rule is strict: a write with a token EQUAL to the last accepted one is
// rejected too (the lab's rule, and the one that makes "one write per
// critical section" checkable). A holder that must write several things
// under one token writes them in one write() (or takes the lock again).
//
// What INCR does NOT protect against (read before trusting it)
// -------------------------------------------------------------
// The counter is an ordinary Redis key, so the tokens are only as durable as
// that key:
// - A Redis restarted without persistence (EmbeddedServer's `--save ""
//   --appendonly no`, or a cache-only deployment) starts the counter again
//   at 1. Every token issued afterwards is <= the resource's last accepted
//   one, so a FencedResource kept elsewhere rejects ALL new holders until
//   the counter catches up (safe, but a liveness outage); a FencedResource
//   on the same restarted server lost its state too and accepts anything
//   (the stale holder's old, high token included: unsafe).
// - A failover to a replica that had not yet received the latest INCRs
//   (Redis replication is asynchronous; WAIT narrows the window but does not
//   close it) re-issues tokens that were already handed out: two holders
//   with the same token, or a new holder with a token lower than a stale
//   one's, and the stale write wins.
// - AOF with `appendfsync everysec` loses up to a second of INCRs on a
//   crash: the same as the failover case.
// - Several independent Redis servers (RedLock) have no common counter at
//   all: INCR on each gives unrelated numbers.
// What would protect: a counter whose every increment is durably agreed by
// a majority before it is handed out — a consensus log (ZooKeeper's zxid /
// znode version, etcd's revision, a Raft-replicated counter). Those never
// re-issue a number after a crash or failover, which is the property the
// resource relies on.
//
// What the resource must do: compare and write atomically (here one Lua
// script; a SQL `UPDATE ... WHERE token < ?`; a compare-and-set). A resource
// that reads the token, then writes, has the same race the lock had.
//
// Tokens are compared as Lua numbers (doubles) inside the scripts: exact
// up to 2^53, i.e. for any counter a lock will ever reach.
//
// Costs: FencingTokens::next() 1 round trip; every fenced lock the same
// round trips per lock/unlock as unfenced (2 uncontended: the token rides the
// acquire); FencedResource::write 1 round trip; LocalFencedResource one mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "distributed/client.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_support.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::redis {

// The token counter of one lock name: the key `<lock_name>~fence`, shared by
// every lock type built with Options::fenced. next() is for code that takes
// tokens without a lock (tests, a resource's own numbering); it is NOT a
// substitute for a fenced lock: a holder that calls next() after acquiring
// can be paused between the two past its lease, a later holder takes the
// lock and a token meanwhile, and the paused one then gets the LARGER token
// and its stale write wins. Inside the acquire script no such window exists.
class FencingTokens {
 public:
  // Binds to `lock_name` on `client` (which must outlive this). Sends
  // nothing. std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp).
  FencingTokens(Client& client, std::string lock_name);

  // The counter key of a lock name: derived_key(lock_name, "fence")
  // (lock_keys.hpp), written <name>~fence here. std::invalid_argument for
  // a name check_lock_name refuses (lock_keys.hpp).
  static std::string key_for(const std::string& lock_name) { return derived_key(lock_name, "fence"); }

  // INCR: the next token (1 for a fresh counter). One round trip.
  // redis::Error if Redis fails; Error(kServer) WRONGTYPE / "not an integer"
  // if the key holds something else.
  std::int64_t next();
  // The last token issued, by next() or by any fenced lock of this name (0
  // if none yet). One round trip (GET).
  std::int64_t current();

  const std::string& key() const noexcept { return key_; }

 private:
  Client& client_;
  std::string key_;
};

// SpinLock (spin_lock.hpp) with Options::fenced on: SET NX PX and INCR in
// one acquire script, polling, compare-and-delete release. Kept for code
// that wants the token as the result of the acquisition; it is a thin
// wrapper, and `SpinLock` with `fenced = true` is the same lock. Not
// reentrant. Outcomes as SpinLock: std::system_error for unlock by a
// non-holder and for re-locking, LockLost from unlock after the lease ran
// out, a single try for zero/negative timeouts, redis::Error when Redis fails.
class FencedSpinLock {
 public:
  struct Options {
    std::chrono::milliseconds lease{100};
    std::chrono::milliseconds retry_interval{50};
    double jitter = 0.0;  // each sleep shortened by a random fraction up to this, in [0, 1]
  };

  // Binds to `name` (string key) and FencingTokens::key_for(name) on
  // `client`. std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp), lease or interval <= 0 or over 100 years, jitter
  // outside [0, 1].
  FencedSpinLock(Client& client, std::string name);
  FencedSpinLock(Client& client, std::string name, Options options);
  FencedSpinLock(const FencedSpinLock&) = delete;
  FencedSpinLock& operator=(const FencedSpinLock&) = delete;

  // The token, or nullopt if `wait` passed (<= 0: one try). The calling
  // thread holds the lock when a token is returned.
  template <class Rep, class Period>
  std::optional<std::int64_t> try_acquire(const std::chrono::duration<Rep, Period>& wait) {
    if (!lock_.try_lock_for(wait)) return std::nullopt;
    return lock_.token();
  }

  // Lockable / TimedLockable, for std::lock_guard and the harness; token()
  // then gives the token.
  void lock() { lock_.lock(); }
  bool try_lock() { return lock_.try_lock(); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return lock_.try_lock_for(timeout);
  }
  template <class C, class D>
  bool try_lock_until(const std::chrono::time_point<C, D>& deadline) {
    return lock_.try_lock_until(deadline);
  }
  // Pre: held by this thread. Compare-and-delete; the token's validity at
  // the resource is unaffected (the next holder's token supersedes it).
  void unlock() { lock_.unlock(); }

  // The token of the calling thread's current hold. Throws
  // std::system_error(operation_not_permitted) if it does not hold it.
  std::int64_t token() const { return lock_.token(); }
  bool is_held_by_current_thread() const { return lock_.is_held_by_current_thread(); }
  const std::string& name() const noexcept { return lock_.name(); }
  const std::string& fence_key() const noexcept { return lock_.fence_key(); }
  // Acquire scripts run so far (successful or not).
  std::uint64_t attempts() const noexcept { return lock_.attempts(); }
  // The lock it wraps (its options(), fenced() ...).
  const SpinLock& spin_lock() const noexcept { return lock_; }

 private:
  SpinLock lock_;
};

namespace detail {

// The acquire script SpinLock and AdaptiveLock run when fenced: SET <key>
// <owner> NX PX <lease>, and on success INCR <fence_key> in the same script.
struct FencedSetNx {
  bool acquired;
  std::int64_t value;  // acquired: the token (>= 1); else the holder's PTTL (-1: no expiry, -2: no key)
};
FencedSetNx fenced_set_nx(Client& client, const std::string& key, const std::string& fence_key,
                          const std::string& owner, std::chrono::milliseconds lease);

// What every lock's token() does: `tokens` is the lock's record of owner ->
// token of its current hold (0: none). std::logic_error if the lock was
// built without Options::fenced (a configuration bug: no token exists);
// std::system_error(operation_not_permitted) if `owner` holds no token.
std::int64_t held_token(const LocalHolds& tokens, bool fenced, const std::string& lock_name,
                        const std::string& owner);

}  // namespace detail

// The resource's answer to one write.
struct FenceVerdict {
  bool accepted = false;
  // The highest token the resource has accepted, after this write (equals
  // the write's token when accepted; when rejected, the one that beat it,
  // 0 if none ever was).
  std::int64_t highest = 0;
};

// A value in Redis guarded by fencing tokens: the hash <name> with fields
// `value`, `token` (highest accepted), `accepted` and `rejected` (totals
// over every writer, every process). The check and the write are one Lua
// script, so no interleaving of writers can slip a stale write past it.
class FencedResource {
 public:
  struct Totals {
    std::int64_t accepted = 0;
    std::int64_t rejected = 0;
    std::int64_t highest = 0;
  };

  // Binds to the hash `name` on `client`. Sends nothing.
  // std::invalid_argument for an empty name.
  FencedResource(Client& client, std::string name);

  // Writes `value` if `token` > the highest accepted token, atomically.
  // std::invalid_argument if token < 1 (INCR never issues one: a caller
  // bug, nothing is sent). redis::Error if Redis fails (then this object's
  // counters are unchanged; the write may or may not have happened, see
  // client.hpp). Error(kServer) WRONGTYPE if `name` holds another type.
  FenceVerdict write(std::int64_t token, const std::string& value);
  // The current value, nullopt if never written. One round trip.
  std::optional<std::string> read();
  // Server-side totals over all writers. One round trip.
  Totals totals();

  // This object's own verdicts (relaxed counters: statistics).
  std::uint64_t accepted() const noexcept { return accepted_.load(std::memory_order_relaxed); }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  const std::string& name() const noexcept { return name_; }

 private:
  Client& client_;
  std::string name_;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> rejected_{0};
};

// The same rule in process memory, for local demos and tests of code that
// takes a resource: a mutex around (value, highest token, counts). Thread-
// safe; no Redis.
class LocalFencedResource {
 public:
  // As FencedResource::write (std::invalid_argument for token < 1).
  FenceVerdict write(std::int64_t token, const std::string& value);
  std::optional<std::string> read() const;
  std::int64_t highest() const;
  std::uint64_t accepted() const;
  std::uint64_t rejected() const;

 private:
  mutable std::mutex mu_;
  std::optional<std::string> value_;
  std::int64_t highest_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t rejected_ = 0;
};

}  // namespace locklab::redis
