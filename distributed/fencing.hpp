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
// script; a SQL `UPDATE ... WHERE token < ?`, which pg::FencedResource in
// postgres/fenced_resource.hpp is; a compare-and-set). A resource
// that reads the token, then writes, has the same race the lock had.
//
// Tokens are compared as Lua numbers (doubles) inside the scripts: exact
// up to 2^53, i.e. for any counter a lock will ever reach.
//
// Where the pieces live
// ---------------------
//   fencing.hpp           this essay and FencingTokens, the counter
//   fenced_resource.hpp   FencedResource, LocalFencedResource
//   fenced_resource_base.hpp  FenceVerdict, FenceTotals, the token check and
//                         the base pg::FencedResource shares (no client)
//   fenced_spin_lock.hpp  FencedSpinLock
//   fenced_acquire.hpp    detail: the fenced SET NX script, token() lookup
//   fencing_token_members.hpp  token(), fenced(), fence_key(), name(),
//                         written once for the locks that derive from it
// Lock headers include at most the last two, which include no lock header,
// so no header includes back one that includes it.
//
// Costs: FencingTokens::next() 1 round trip; every fenced lock the same
// round trips per lock/unlock as unfenced (2 uncontended: the token rides the
// acquire); FencedResource::write 1 round trip; LocalFencedResource one mutex.
#pragma once

#include <cstdint>
#include <string>

#include "distributed/client.hpp"
#include "distributed/lock_keys.hpp"
// The rest of the toolkit the essay describes, so that this one include
// gives all of it (FencingTokens itself needs neither).
#include "distributed/fenced_resource.hpp"
#include "distributed/fenced_spin_lock.hpp"

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

}  // namespace locklab::redis
