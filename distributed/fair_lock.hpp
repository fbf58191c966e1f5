// fair_lock.hpp — a FIFO Redis lock with direct hand-off (Redisson's
// RFairLock idea, with a blocking pop instead of a herd): the releaser
// passes ownership to the longest-waiting live waiter and wakes exactly that
// one. No herd, no barging, and so a bounded, flat latency distribution.
//
// State in Redis (all keys derive from `name`, lock_keys.hpp: `<name>~role`
// stands for derived_key(name, role), `~{<name>}~role` for a name without a
// {hash tag}, so every key is in the lock key's cluster slot; the scripts
// build the per-waiter keys from the token, keys they do not declare)
// ---------------------------------------------------------------------------
//   <name>                 string: the owner token, PX = the owner's lease
//   <name>~queue           sorted set: waiter tokens, score = arrival rank
//                          (last score + 1), i.e. the FIFO order
//   <name>~alive:<token>   string: that waiter's lease in ms, with a
//                          trailing `f` if it wants a fencing token, PX =
//                          queue_lease. Its existence IS the waiter's
//                          liveness: an entry whose alive key expired is dead
//   <name>~wake:<token>    list: one element pushed by a hand-off (the
//                          waiter's fencing token, or 0); the waiter sleeps
//                          on it with BLPOP
//   <name>~fence           the fencing-token counter (fencing.hpp), INCRed
//                          only for owners that want tokens
// Tokens are Client::thread_owner() (unguessable, one per thread).
//
// The protocol, step by step
// --------------------------
// acquire script (1 round trip), "attempt(enqueue)":
//   a. If <name> already holds my token, a hand-off reached me while I was
//      not in BLPOP: DEL my wake list (that consumes the wake-up), acquired.
//   b. If <name> is free: look at the queue head. Dead heads (no alive key)
//      are removed, one after another. If the queue is then empty, or its
//      head is me: take the lock (SET PX lease; leave the queue), acquired.
//      If the head is another live waiter (the lock freed by lease expiry,
//      so no release handed it on): hand it to that head (below) — a
//      newcomer never takes a lock that a queued waiter is owed (no barging).
//   c. Not acquired. With enqueue (a waiting call): if my alive key is gone
//      (I am new, or my entry expired and lost its place) ZREM me and ZADD me
//      at the tail; then SET my alive key (value: my lease) PX queue_lease
//      and keep <name>~queue alive at least queue_lease. Without enqueue
//      (try_lock, a zero timeout) nothing is written. Returns the owner's
//      PTTL.
// A waiter (lock, try_lock_for):
//   1. attempt(enqueue); acquired -> done.
//   2. BLPOP <name>~wake:<me> for min(deadline, queue_lease / 3, the
//      owner's PTTL + 1 ms). An element -> the lock is mine already (the
//      releaser set <name> to my token): done, with no further round trip.
//   3. Timed out: attempt(enqueue) again — that refreshes my alive key, takes
//      the lock if its owner died (lease ran out) and I am the head, or
//      hands it to the live head; back to 2.
//   4. At the deadline: the leave script: ZREM me, DEL my alive and wake
//      keys; if <name> holds my token (a hand-off raced with my timeout),
//      hand it on to the next live waiter, or DEL it if none. Returns false.
// release script (1 round trip):
//   not my token -> nothing changes, reports "gone" or "another owner";
//   else hand-off: pop queue heads until one is alive; for that head: DEL
//   its alive key, SET <name> <head> PX <head's lease>, RPUSH one element
//   to its wake list (PEXPIRE'd, so a dead waiter's list does not stay);
//   no live head -> DEL <name>.
// Exactly one RPUSH per release: one waiter wakes, and it wakes owning the
// lock, so it never retries against anybody.
//
// Fencing tokens (Options::fenced, fencing.hpp)
// --------------
// Every script that makes a thread the owner takes its token in the same
// script: the acquire script INCRs <name>~fence when it takes a free lock
// for the caller (1b), and the hand-off INCRs for the waiter it hands to
// and pushes the token as that waiter's wake element, so BLPOP delivers
// ownership and token together (no extra round trip anywhere: still 2 per
// uncontended lock/unlock, 3 per contended acquisition). Whether the
// hand-off takes a token is the WAITER's choice, written in its alive key
// (`<lease>f`), so a releaser built without fenced still hands a fenced
// waiter its token. A hand-off that reaches a waiter between two BLPOPs is
// collected by its next attempt (1a), token included. token() returns the
// token while the thread holds the lock. Off by default: no counter key.
//
// What it costs
// -------------
// Uncontended: 2 round trips per lock/unlock (acquire script, release
// script). Contended: 3 per acquisition (the enqueueing attempt, the BLPOP,
// the release), plus one refresh per queue_lease / 3 of waiting. Hand-off
// latency: the release script's round trip plus Redis unblocking the BLPOP
// (~70 us warm on this machine). Each waiting thread keeps one connection
// of the Client's pool inside BLPOP: size Client::Options::max_connections
// above the number of threads that may wait at once (default 128).
//
// Failure modes
// -------------
// - Holder dies: its lease runs out; the head wakes at the owner's PTTL (or
//   queue_lease / 3), and its attempt takes the lock (step 3, 1b).
// - A queued waiter dies: its alive key expires at most queue_lease after
//   its last refresh; from then on every hand-off skips and removes it. A
//   hand-off that reaches it before that (the window is at most queue_lease
//   wide) makes it a dead holder: the lock frees after ITS lease (the value
//   in its alive key). So a dead waiter delays the queue by at most its
//   lease, and only if it was the head inside that window.
// - A waiter whose try_lock_for times out removes itself (step 4) and
//   passes on a hand-off that reached it too late: nobody is left owning a
//   lock that no thread believes it holds.
// - Redis unreachable, killed or restarted: the script or the BLPOP throws
//   redis::Error (kIo at once when the connection breaks; kConnect /
//   kTimeout within the Client's timeouts); the waiter then tries, best
//   effort, the leave script and rethrows. What it cannot remove expires
//   (its entry after queue_lease, a hand-off after the lease). After an
//   unknown outcome (kTimeout or kIo: the attempt, the BLPOP or the release
//   may have run with its reply lost, making this thread the owner unseen)
//   the leave runs as a restore, its source sent with EVAL (no script load
//   needed), on the first attempt too, before the error propagates (so at
//   most one command_timeout later); if it fails, or the command failed
//   with kConnect (it never reached the server), it runs before this
//   thread's next acquire or release through this object (which throws its
//   redis::Error while it keeps failing). A restarted
//   server without persistence has forgotten everything: locks start free.
//   Scripts are reloaded after NOSCRIPT.
// - Lease ran out under the holder: unlock() finds another token (it was
//   handed on, or taken) or no key, changes nothing and throws LockLost.
// - A key of another type under `name`: Error(kServer) quoting WRONGTYPE.
//
// Outcomes (each tested in tests/distributed/fair_lock_test.cpp)
// --------
// - FIFO: waiters enqueued in a known order acquire in that order, each
//   after exactly one attempt (no herd: attempts() counts them).
// - unlock() by a thread that does not hold it (per this object's record):
//   std::system_error(operation_not_permitted); nothing is sent.
// - lock()/try_lock*() by the holder: not reentrant ->
//   std::system_error(resource_deadlock_would_occur), nothing sent.
// - try_lock(), try_lock_for(<= 0), a past try_lock_until: one attempt,
//   never enqueued, no BLPOP; false whenever live waiters are queued (no
//   barging). A timed try's false comes no earlier than its deadline.
//
// When to use it: many waiters on one lock, when a flat p95 matters more
// than the last few percent of throughput, and when starvation is not
// acceptable. Its price: every waiter costs a pooled connection while it
// waits, and a hand-off to a waiter that is slow to run still makes the lock
// wait for it (FIFO's convoy: no newcomer may use the gap).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "distributed/client.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/fencing_token_members.hpp"
#include "distributed/lock_support.hpp"

namespace locklab::redis {

class FairLock : public DeadlineLockable<FairLock>, public FencingTokenMembers<FairLock> {
 public:
  struct Options {
    // The owner's lease: <name> expires this long after the acquisition
    // (no watchdog; a longer critical section gets LockLost at unlock()).
    std::chrono::milliseconds lease{10'000};
    // A queued waiter's liveness lease, renewed every queue_lease / 3 while
    // it waits: how long a dead waiter may keep its place in the queue.
    std::chrono::milliseconds queue_lease{1'000};
    // Take a fencing token (INCR <name>~fence) for each acquisition by this
    // object, including the hand-offs to its waiters.
    bool fenced = false;
  };

  // Binds to `name` and the keys derived from it (essay) on `client`, which
  // must outlive the lock. Sends nothing. std::invalid_argument for a
  // name check_lock_name refuses (lock_keys.hpp), a lease <= 0, a
  // queue_lease < 3 ms, or either over 100
  // years (detail::kMaxDuration).
  FairLock(Client& client, std::string name);
  FairLock(Client& client, std::string name, Options options);
  // Pre: no thread holds or waits for it through this object.
  ~FairLock() = default;
  FairLock(const FairLock&) = delete;
  FairLock& operator=(const FairLock&) = delete;

  // lock() queues and waits for the hand-off, without a time limit;
  // try_lock() is one attempt, never queued: true only if free and nobody is
  // queued; try_lock_for / try_lock_until queue and wait until the deadline
  // (<= 0 or past: as try_lock()), and on false the waiter has left the
  // queue (essay, step 4). DeadlineLockable.
  // Pre: held by this thread. Hands the lock to the next live waiter (or
  // frees it); std::system_error / LockLost / redis::Error as in the essay.
  void unlock();

  bool is_held_by_current_thread() const { return holds_.count(client_.thread_owner()) > 0; }
  // token(), fenced(), fence_key(), name(): FencingTokenMembers.
  const std::string& queue_key() const noexcept { return queue_; }
  const Options& options() const noexcept { return options_; }
  // Acquire-script runs so far (enqueueing attempts and refreshes).
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
  // Releases through this object that handed the lock to a waiter.
  std::uint64_t handoffs() const noexcept { return handoffs_.load(std::memory_order_relaxed); }

 private:
  friend DeadlineLockable<FairLock>;
  friend FencingTokenMembers<FairLock>;
  using Clock = std::chrono::steady_clock;
  struct Attempt {
    bool acquired;
    std::int64_t pttl_ms;  // not acquired: the owner's remaining lease, < 0 if none
  };
  bool acquire_until(Clock::time_point deadline);
  Attempt attempt(const std::string& owner, bool enqueue);
  // The leave script; true if a hand-off had reached us and was passed on.
  bool leave(const std::string& owner);
  // After an unknown outcome: the leave script (our queue entry removed, a
  // lock that is ours handed on or freed), sent with its source.
  void restore(const std::string& owner);

  Client& client_;
  std::string name_;
  std::string queue_;
  std::string waiter_key_prefix_;  // derived_key_prefix(name_), of the alive and wake keys
  std::string fence_key_;
  Options options_;
  detail::LocalHolds holds_;
  detail::LocalHolds tokens_;  // fenced: owner -> token of its hold (one number per owner)
  detail::InDoubt doubts_;     // owners whose last attempt, BLPOP or release had an unknown outcome
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> handoffs_{0};
};

}  // namespace locklab::redis
