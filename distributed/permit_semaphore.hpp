// permit_semaphore.hpp — Redisson's RPermitExpirableSemaphore: a counting
// semaphore in Redis whose permits are named and leased. A holder gets a
// permit id; the permit returns to the pool when the holder releases it (by
// id, from any thread or process that knows the id) or when its lease runs
// out (a crashed holder cannot leak a permit for longer than its lease).
//
// The state in Redis
// ------------------
//   <name>            string: the number of permits n, set once by
//                     try_set_permits (SET NX), or by an acquire given
//                     permits_if_missing; absent = not set up yet, or lost
//                     (FLUSHALL, a restart without persistence, eviction)
//   <name>~timeout    ZSET: permit id -> expiry (server ms)  (the held ones)
//   <name>~channel    pub/sub channel: "a permit may be free"
// available = n - ZCARD(<name>~timeout) after purging expired entries. Every
// script first purges (ZREMRANGEBYSCORE -inf now), so an expired permit is
// reclaimed by the next operation of anyone, without a reaper thread. The
// clock is the server's (TIME inside the script; Redis >= 5 replicates
// script effects, not scripts, so this is allowed and consistent): clients
// with skewed clocks agree on every expiry.
//
// The protocol
// ------------
//   acquire script (1 round trip): purge; if the count key is missing and
//     the caller gave permits_if_missing: SET it; if ZCARD < n: ZADD id
//     now+lease, return acquired; else return the time until the earliest
//     expiry (-1 if none, or not set up).
//   release script (1 round trip): ZSCORE id, purge, ZREM id -> released /
//     expired (its score had passed) / unknown.
//   wake-ups: a script that frees permits (release, purge) publishes one
//     message per freed permit, at most as many as are free and at most 16
//     per script; a successful acquire that leaves permits free publishes
//     one more (a chain: each woken winner passes the wake-up on, so any
//     number of waiters is reached); try_set_permits publishes one.
//     (SPUBLISH on a cluster, which stays on the semaphore's master:
//     publishing_script.hpp.)
// A waiter follows PubSubLock's order (subscriber.hpp): join the channel if
// this process already listens, attempt; else SUBSCRIBE through the
// Client's one shared Subscriber, wait for the server's confirmation, and
// attempt AGAIN (a release between the first attempt and the subscription
// published to nobody); then sleep until a message, the earliest expiry the
// last attempt reported (a crashed holder publishes nothing), or the
// deadline; attempt; repeat. A message wakes one waiter per process.
//
// Outcomes (each tested in tests/distributed/permit_semaphore_test.cpp)
// --------
// - Never more than n permits held: ZCARD < n and ZADD are one script.
// - try_acquire with wait <= 0: exactly one attempt and no subscription.
//   nullopt never comes before the deadline (a last attempt is made then).
// - Not set up (try_set_permits never called): n counts as 0, acquire waits
//   (Redisson's behaviour: another process may be about to set it), and
//   wakes when try_set_permits publishes. permits() tells the two apart.
// - The count key lost after it was set (FLUSHALL, a restart without
//   persistence, an eviction) looks exactly like "not set up": a plain
//   acquire waits for a try_set_permits that a process which set it once
//   may never send again. An acquire given permits_if_missing re-creates
//   the count in its own script (never changing a count that exists), so
//   the semaphore heals at the next attempt of anyone who knows n.
//   GuardedLock<PermitSemaphore> passes its permits on every acquire. The
//   permits held before the loss are gone with it: their release() throws
//   PermitNotHeld. A waiter parked when the key vanished finds it at its
//   next attempt: a message, a reconnect, or the expiry its last attempt
//   saw (at the latest its deadline when no permit was held).
// - release(id) of an id that is not held — never issued, already released,
//   or expired — throws PermitNotHeld, and changes nothing. expired() is
//   true when the script saw the permit's lease passed; an expired permit
//   that another operation reclaimed first is indistinguishable from an
//   unknown id (expired() false; the message says "unknown, already
//   released, or expired and reclaimed"). Either way the holder's work was
//   not protected to its end (as LockLost for locks).
// - Bad arguments (caller bugs): std::invalid_argument, nothing sent —
//   negative permit counts, a lease <= 0 or over 100 years
//   (detail::kMaxDuration), an empty id or name.
// - Redis unreachable, killed or slow: redis::Error (kConnect / kIo /
//   kTimeout) from the operation, within the Client's timeouts.
// - An acquire attempt or a release that fails with an unknown outcome
//   (kTimeout or kIo: the server may have run it and the reply was lost):
//   before the error propagates (so at most one command_timeout later),
//   the release script runs once for that permit id (its source sent with
//   EVAL), so a permit taken unseen does not sit in the pool, unusable by
//   anyone, until its lease ends; and a lost release is done again. If that
//   fails too, or the command failed with kConnect (it never reached the
//   server), this object runs it before its next acquire or release (which
//   throw its redis::Error while it keeps failing); meanwhile the permit
//   expires with its lease. (The locks' rule, detail::InDoubt; the ids are
//   single-use, so every remembered one is restored, not just the
//   caller's.)
// - A key of another type under a name: Error(kServer) quoting the server.
//
// Failure modes worth knowing: a waiter whose last attempt saw permits with
// a long lease sleeps until that expiry unless a message comes; a permit
// acquired later with a SHORTER lease that expires unnoticed (nobody runs a
// script, so nobody purges and publishes) is found at that wake-up, not
// earlier. Keep leases of one semaphore similar, or bound the wait.
//
// What it costs: 1 round trip per uncontended try_acquire and per release;
// a waiter adds one SUBSCRIBE when it is the first of its process (and an
// UNSUBSCRIBE when the last leaves), and one attempt per wake-up. Every
// process that waits gets every message: with P processes each holding W
// waiters, a release wakes P waiters (one per process) of which one wins —
// the herd that GuardedLock (guarded_lock.hpp) flattens.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "distributed/client.hpp"
#include "distributed/lock_support.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis {

// release() of a permit id this semaphore does not hold (see the essay).
class PermitNotHeld : public std::runtime_error {
 public:
  PermitNotHeld(const std::string& semaphore, const std::string& permit_id, bool expired)
      : std::runtime_error("permit '" + permit_id + "' of semaphore '" + semaphore + "' is not held: " +
                           (expired ? std::string("its lease expired before the release")
                                    : std::string("unknown id, already released, or expired and reclaimed")) +
                           "; nothing was changed"),
        semaphore_(semaphore),
        permit_id_(permit_id),
        expired_(expired) {}

  const std::string& semaphore() const noexcept { return semaphore_; }
  const std::string& permit_id() const noexcept { return permit_id_; }
  // True when the release found the permit with its lease passed.
  bool expired() const noexcept { return expired_; }

 private:
  std::string semaphore_;
  std::string permit_id_;
  bool expired_;
};

// Not DeadlineLockable: an acquisition yields a permit id that any thread may release, not a hold of the caller.
class PermitSemaphore {
 public:
  // Binds to `name`, derived_key(name, "timeout") and the channel
  // derived_key(name, "channel") (lock_keys.hpp) on `client` (which must
  // outlive this). Sends nothing. std::invalid_argument for a name
  // check_lock_name refuses (lock_keys.hpp).
  PermitSemaphore(Client& client, std::string name);
  PermitSemaphore(const PermitSemaphore&) = delete;
  PermitSemaphore& operator=(const PermitSemaphore&) = delete;

  // Sets the number of permits to n if it was never set; true if this call
  // set it. Publishes a wake-up when it does. std::invalid_argument for
  // n < 0 (nothing sent). One round trip.
  bool try_set_permits(std::int64_t n);
  // The number of permits set, nullopt if not set up. One round trip.
  std::optional<std::int64_t> permits();
  // Permits free now (after reclaiming expired ones; 0 if not set up).
  // One round trip.
  std::int64_t available_permits();

  // Takes a permit for `lease` (> 0), waiting up to `wait` (<= 0: one
  // attempt). The permit id, or nullopt if none was free in time. The id is
  // unique (this Client's random id plus a process-wide number) and may be
  // released by any thread or process. std::invalid_argument for a lease
  // <= 0 or over 100 years; redis::Error as in the essay.
  template <class R1, class P1, class R2, class P2>
  std::optional<std::string> try_acquire(const std::chrono::duration<R1, P1>& wait,
                                         const std::chrono::duration<R2, P2>& lease) {
    return acquire_until(detail::deadline_after(wait), std::chrono::ceil<std::chrono::milliseconds>(lease));
  }
  template <class C, class D, class R2, class P2>
  std::optional<std::string> try_acquire_until(const std::chrono::time_point<C, D>& deadline,
                                               const std::chrono::duration<R2, P2>& lease) {
    return acquire_until(detail::to_steady(deadline), std::chrono::ceil<std::chrono::milliseconds>(lease));
  }
  // As above, and if the count key is missing (never set, or lost) the
  // acquire script first sets it to permits_if_missing (>= 0; a count that
  // exists is never changed): see the essay. std::invalid_argument for a
  // negative permits_if_missing.
  template <class R1, class P1, class R2, class P2>
  std::optional<std::string> try_acquire(const std::chrono::duration<R1, P1>& wait,
                                         const std::chrono::duration<R2, P2>& lease, std::int64_t permits_if_missing) {
    return acquire_until(detail::deadline_after(wait), std::chrono::ceil<std::chrono::milliseconds>(lease),
                         permits_if_missing);
  }
  template <class C, class D, class R2, class P2>
  std::optional<std::string> try_acquire_until(const std::chrono::time_point<C, D>& deadline,
                                               const std::chrono::duration<R2, P2>& lease,
                                               std::int64_t permits_if_missing) {
    return acquire_until(detail::to_steady(deadline), std::chrono::ceil<std::chrono::milliseconds>(lease),
                         permits_if_missing);
  }
  // Waits without a time limit.
  template <class R2, class P2>
  std::string acquire(const std::chrono::duration<R2, P2>& lease) {
    return *acquire_until(detail::Clock::time_point::max(), std::chrono::ceil<std::chrono::milliseconds>(lease));
  }

  // Returns the permit `id` to the pool and wakes a waiter. Throws
  // PermitNotHeld (nothing changed) if it is not held; std::invalid_argument
  // for an empty id; redis::Error if Redis fails. One round trip.
  void release(const std::string& id);

  const std::string& name() const noexcept { return name_; }
  const std::string& timeout_key() const noexcept { return timeout_key_; }
  const std::string& channel() const noexcept { return channel_; }
  // Acquire scripts run so far through this object (successful or not).
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }

 private:
  // permits_if_missing: nullopt leaves a missing count missing. grant_until,
  // then the WAIT of Client::Options::wait_replicas (replica_wait.hpp).
  std::optional<std::string> acquire_until(detail::Clock::time_point deadline, std::chrono::milliseconds lease,
                                           std::optional<std::int64_t> permits_if_missing = std::nullopt);
  std::optional<std::string> grant_until(detail::Clock::time_point deadline, std::chrono::milliseconds lease,
                                         std::optional<std::int64_t> permits_if_missing);
  // One acquire script; not acquired: pttl_ms = ms until the earliest
  // expiry, -1 if none.
  detail::WaitAttempt attempt(const std::string& id, const std::string& lease_ms, const std::string& permits_if_missing);
  // After an unknown outcome: the release script for `id` (frees the
  // permit if the lost command took it; harmless if not).
  void restore(const std::string& id);

  Client& client_;
  std::string name_;
  std::string timeout_key_;
  std::string channel_;
  detail::InDoubt doubts_;  // permit ids whose acquire or release had an unknown outcome
  std::atomic<std::uint64_t> attempts_{0};
};

}  // namespace locklab::redis
