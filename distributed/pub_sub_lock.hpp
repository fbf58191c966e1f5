// pub_sub_lock.hpp — the Redisson RLock analogue: a reentrant Redis lock
// whose waiters sleep on a pub/sub channel instead of polling, with a
// watchdog that keeps the lease alive while its owner runs.
//
// The protocol
// ------------
// State in Redis: a hash at <name>, one field per owner token (Client::
// thread_owner()) holding that owner's hold count, with a TTL (the lease).
//   acquire script (1 round trip), given the count this object records:
//     re-entry (recorded count > 0) and no field of mine: return lost
//                                      (the lease ran out: LockLost, below)
//     if no key or the key has my field: HINCRBY name me 1; PEXPIRE name
//     lease; return acquired          (reentrant: the count goes up)
//     else return PTTL name            (how long the holder's lease runs)
//   release script (1 round trip):
//     not my field: deletes nothing, reports "gone" or "other owner"
//     HINCRBY name me -1; > 0: PEXPIRE (still held, re-entered)
//     = 0: DEL name; PUBLISH <name>~channel   (one message per release;
//          SPUBLISH on a cluster, which stays on the lock's master:
//          publishing_script.hpp)
// A waiter:
//   1. attempts; if it fails and may wait,
//   2. subscribes to <name>~channel through the Client's one shared pub/sub
//      connection (Subscriber) and waits for the server's confirmation,
//   3. attempts AGAIN (the re-check after subscribing: a release between 1
//      and 2 published to nobody and would otherwise be noticed only when
//      the lease ran out, a known Redisson failure),
//   4. sleeps until a release message or the holder's remaining lease (the
//      PTTL from the last attempt: a crashed holder publishes nothing), or
//      the caller's deadline; attempts again; repeat.
// If other threads of this process already listen on the channel, the
// waiter joins that subscription before step 1 (no round trip) and skips
// step 3: the listening connection was live before its attempt. If some of
// them are waiting, it skips step 1 too (below).
//
// Wake-one: a release message wakes ONE local waiter (Subscriber's wake
// permits, oldest waiter first), not all of them; if it loses the race (to a
// waiter of another process, or to a newcomer that found no queue), it keeps
// its place and the winner's release will publish again. That is the
// ticket-sale semaphore herd gone (every waiter ran the script on every
// release: a naive pub/sub measured 27-28 round trips per acquisition at 50
// waiters). Per contended acquisition: one successful attempt after a wake-up
// and one release = 2 round trips, plus one failed arrival attempt for a
// waiter that arrives when no waiter of its process is queued (3 in all; a
// lone waiter per process, e.g. 50 processes of 1).
//
// No barging within a process
// ---------------------------
// An arrival that joins a channel on which waiters of this process are
// queued already (Subscription::ahead() > 0) does not attempt at all: it
// queues behind them and waits for its permit. Its attempt would usually
// fail (the lock is held: a wasted round trip), and when it would succeed
// it would be barging: taking the lock in the ~0.1-0.3 ms between a release
// and the woken waiter's attempt, which sends that waiter back to sleep and
// at 50 waiters stretched p95 to ~3x p50 in our runs (old: p50 57-60 ms,
// p95 177-183 ms whenever the CPUs idled). Why the skip loses no wake-up:
// a release that comes after our join grants a permit to the oldest member
// without one (us, or one ahead of us), and so does a release whose
// message is still in flight; every permit leads to an attempt; a member
// that leaves with an unused permit passes it on; a member whose attempt
// fails keeps its place for the next release. The lock can be free with
// no message coming only if a lease ran out (a holder died): the members
// that attempted wake at the PTTL they were told and take it, and a
// skipper, which asked nothing, is bounded by the lease its own
// acquisition would take (its options' lease, or watchdog_lease). Waiters
// of other processes are not in this queue: their newcomers attempt on
// arrival and may still barge past ours (FairLock queues across processes).
//
// Leases and the watchdog
// -----------------------
// Options::lease > 0: the key expires lease after the last acquire or
// re-entry, whatever the holder does; unlock() after that throws LockLost.
// Options::lease == 0 (the default, Redisson's lock() without leaseTime):
// the lease is watchdog_lease (30 s) and the Client's renewal timer
// (lease_renewer.hpp: ONE thread per Client, for every lock built on it)
// renews it (PEXPIRE, owner-checked) every watchdog_lease / 3 while this
// thread holds the lock. It stops renewing at the final unlock, when a
// renewal finds the owner's field gone (the lock was lost: unlock() will
// report LockLost), or when the lock object is destroyed. A process killed
// with SIGKILL renews nothing: its lock frees at most watchdog_lease later.
// A renewal that fails because Redis is unreachable or slow is retried at
// the next period (the lease may run out meanwhile: then unlock() reports
// it).
//
// Lease at risk: the holder is told before unlock()
// -------------------------------------------------
// A renewal that fails is not silent. Two verdicts (LeaseRisk::Kind):
// - kRenewalFailed: the renewal got a redis::Error (unreachable, timed
//   out, connection lost). The lease may still run (it was renewed at most
//   watchdog_lease / 3 before, or the command ran and only its reply was
//   lost) or may run out before the next try: nobody knows. `detail` is the
//   error's message.
// - kLost: the renewal found the owner's field gone (taken_by_other false:
//   the key is gone) or the key held by another owner (taken_by_other
//   true). The lease has ended; renewing stops; unlock() will throw
//   LockLost.
// Two ways to learn it, both without a round trip:
// - lease_risk() / lease_at_risk(), on the holding thread: the worst
//   verdict since this thread's outermost watchdog-mode acquisition, until
//   the final unlock() (or a LockLost) clears it. Sticky: a later renewal
//   that succeeds does not clear kRenewalFailed (the window in which the
//   lease was unknown is part of this hold). Check it before each write to
//   the protected resource; it costs one mutex and a map lookup. A fixed-
//   lease hold (lease > 0) is never renewed and never reported: its end is
//   known to its holder. lease_at_risk() == false is no promise that the
//   lease still runs (a renewal fails only every watchdog_lease / 3, and a
//   paused process learns nothing): only a fencing token protects a write.
// - Options::on_lease_risk, if set: called on the Client's renewal timer
//   thread, after lease_risk() already reports the verdict, at most once
//   per verdict per hold: once kRenewalFailed (the first failure), once
//   kLost, in that order when both come; never again for that hold after
//   kLost. It runs with no lock of this object held, but while it runs no
//   renewal of ANY lock of the Client runs: it must return quickly (set a
//   flag, notify a condition variable), must not block, must not call this
//   lock (lock/unlock/destroy it), and must not wait for a thread that may
//   be inside unlock() or ~PubSubLock of this lock (the destructor waits
//   for a callback in progress). An exception it throws is dropped. It may
//   still run just after the final unlock() returned (a verdict recorded
//   before that unlock), never after ~PubSubLock returned.
//
// Outcomes (each tested in tests/distributed/pub_sub_lock_test.cpp)
// --------
// - Reentrancy: the holder may lock again (1 round trip, renews the
//   lease); it must unlock as many times. hold_count() is this thread's.
// - A re-entry (lock() / try_lock*() / try_lock_async by a thread this
//   object records as holding) after the lease ran out: the script finds
//   the owner's field gone and grants nothing, and the call throws LockLost
//   at once (no waiting; taken_by_other() when another owner holds the key
//   now). It never starts a new hold in the outer section's place, whose
//   inner unlock() would free the lock under the outer section, and never
//   waits to take the key back from its new owner. The hold record is
//   cleared: hold_count() is 0 and the next lock() is a new, outermost
//   acquisition.
// - unlock() after the lease expired (the field is gone): LockLost;
//   taken_by_other() when another owner holds the key now. The hold record
//   is cleared as above.
// - Watchdog mode, a renewal fails (Redis unreachable or slow): the hold is
//   kept, lease_risk() reports kRenewalFailed and on_lease_risk is called
//   once; renewing goes on each period. A renewal that finds the key gone
//   or another owner's: kLost (taken_by_other as LockLost's), the callback
//   once more, renewing stops; unlock() then throws LockLost.
// - The outer holds of a lost lease: each of their unlock() calls still to
//   come throws LockLost as well (taken_by_other() as when the loss was
//   found), with no round trip, so every critical section the loss cut
//   short is told, each once. Holds taken after the loss are unlocked
//   first (they nest inside), normally. Then unlock() is a non-holder's.
// - unlock() by a thread that does not hold it (per this object's record,
//   and owing no unlock of a lost hold): std::system_error
//   (operation_not_permitted); nothing is sent.
// - An attempt or release that fails with an unknown outcome (redis::Error
//   kTimeout or kIo: the server may have run it and the reply was lost):
//   the error propagates, and first (so at most one command_timeout later)
//   the lock restores the server to this object's record with one
//   owner-checked script (its source sent with EVAL, so no script load is
//   needed): the owner's count is brought down to the recorded one; at 0
//   the field goes, and with the last field the key, publishing as a
//   release would. So a lost acquire reply leaves no hold that the next
//   lock() would re-enter at count 2 and one unlock() leave behind (for the
//   watchdog to renew for ever). If the restore fails too, or the command
//   failed with kConnect (it never reached the server), it runs before this
//   thread's next acquire or release through this object (which throws
//   its redis::Error while it keeps failing); meanwhile a hold nobody
//   records lasts at most its lease (the watchdog renews recorded holds
//   only). An unlock() that throws redis::Error still counts: the record
//   goes down by one either way.
// - try_lock(), try_lock_for(<= 0), a past try_lock_until: one attempt and no
//   subscription at all (no SUBSCRIBE is ever sent: the drained thread pool's
//   cure for an exhausted worker pool). A false return from a timed try comes
//   no earlier than the deadline.
// - Redis unreachable, killed or restarted: the attempt or the
//   re-subscription throws redis::Error within the Client's timeouts; a
//   waiter never sleeps past its deadline or the holder's lease.
// - A key of another type under `name`: Error(kServer) quoting WRONGTYPE.
// - The server refuses a waiter's SUBSCRIBE (NOAUTH, or NOPERM for an ACL
//   user without the channel: Redis 7's default acl-pubsub-default
//   resetchannels): Error(kServer) quoting it, at once (subscriber.hpp).
// - The server refuses the final unlock's wake-up PUBLISH (the same ACL
//   user): the hash is deleted and unlock() returns normally — a released
//   lock is never reported as not released (the script PUBLISHes with
//   pcall after its DEL). unpublished_releases() counts these; waiters
//   elsewhere learn of the release at their lease bound.
// - A lease over 100 years (detail::kMaxDuration), as an option or per
//   call: std::invalid_argument before anything is sent; the acquire
//   script also refuses one before it writes, so no hash is ever left
//   without a TTL. A holder's PTTL beyond the steady clock's range (another
//   client's lease) is waited for as "until the deadline".
// - try_lock_async(wait, lease): the caller gets a std::future<bool> at
//   once; attempts run on this lock's one async worker thread, which waits
//   on the same subscription (wake-one among the async requests), so 1,000
//   pending async acquisitions park no caller thread and cost one thread
//   in total. The lock, once acquired, belongs to the CALLING thread (its
//   owner token is taken at the call): that thread must unlock().
//
// Fencing tokens (Options::fenced, fencing.hpp)
// --------------
// With fenced = true the acquire script also INCRs <name>~fence when the
// hold count it writes is 1 (an outermost acquisition, including one after
// a lost lease), and returns the token with the count: no extra round trip.
// Re-entry issues none: token() is the token of the outermost acquisition
// until the final unlock. (If this object has no token for a thread whose
// field the server still holds — another PubSubLock object on the same name
// took it — the script issues a fresh one: it is taken while the hold is
// live, so it still orders after every earlier holder.) try_lock_async's
// acquisition records the token for the calling thread. Off by default: no
// counter key.
//
// What it costs: 2 round trips per uncontended lock/unlock; in steady
// contention 2 per acquisition when waiters queue in the process, 3 for a
// process's lone waiter (above), plus, when the first waiter of
// the process arrives, one SUBSCRIBE (and an UNSUBSCRIBE when the last one
// leaves). Threads: the Client's subscriber and the Client's one renewal
// timer (started by the first watchdog-mode acquisition of any lock built
// on that Client), plus per lock object an async worker (started by the
// first try_lock_async). Renewal: one round trip per held watchdog-mode
// hold per watchdog_lease / 3, run one at a time on the timer thread.
//
// When to use it: the default Redis lock for contended keys held
// milliseconds to seconds, when holders are threads that unlock what they
// locked. For strict arrival order use FairLock; for a lock that must not
// cost a subscription, SpinLock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "distributed/client.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/fencing_token_members.hpp"
#include "distributed/lease_renewer.hpp"
#include "distributed/lock_support.hpp"
#include "distributed/subscriber.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis {

class PubSubLock : public DeadlineLockable<PubSubLock>, public FencingTokenMembers<PubSubLock> {
 public:
  // What a watchdog renewal found wrong with one hold ("Lease at risk" in
  // the essay).
  struct LeaseRisk {
    enum class Kind {
      kRenewalFailed,  // a redis::Error: the lease may still run, or not
      kLost,           // the field is gone or the key another owner's
    };
    Kind kind;
    std::string lock_name;
    std::string owner;            // the holder's Client::thread_owner()
    bool taken_by_other = false;  // kLost: another owner holds the key now
    std::string detail;           // kRenewalFailed: the error's message
  };

  struct Options {
    // > 0: fixed lease per acquisition. 0: watchdog mode (see the essay).
    std::chrono::milliseconds lease{0};
    std::chrono::milliseconds watchdog_lease{30'000};
    // Take a fencing token (INCR <name>~fence) in each outermost acquisition.
    bool fenced = false;
    // Watchdog mode: told when a renewal fails or finds the hold lost, on
    // the Client's renewal timer thread; must return quickly and must not
    // call this lock ("Lease at risk" in the essay for the whole contract).
    std::function<void(const LeaseRisk&)> on_lease_risk;
  };

  // Binds to `name` (hash key) and the channel derived_key(name,
  // "channel") (lock_keys.hpp) on `client`, which must outlive the lock.
  // Sends nothing. std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp), a negative lease, a watchdog_lease < 3 ms, or either
  // over 100 years (detail::kMaxDuration).
  PubSubLock(Client& client, std::string name);
  PubSubLock(Client& client, std::string name, Options options);
  // Cancels this object's renewals (held locks then expire after their
  // lease), waiting for one in progress and its on_lease_risk call, and
  // stops the async worker (pending async requests complete with false).
  // Pre: no thread is inside lock()/unlock() on this object; not called
  // from on_lease_risk.
  ~PubSubLock();
  PubSubLock(const PubSubLock&) = delete;
  PubSubLock& operator=(const PubSubLock&) = delete;

  // lock() waits without a time limit (re-entry if held); try_lock() is one
  // attempt, no subscription; try_lock_for / try_lock_until wait until the
  // deadline (<= 0 or past: as try_lock()). DeadlineLockable, each with the
  // options' lease. Throw redis::Error, or LockLost for a re-entry whose
  // hold is gone (see the essay).
  using DeadlineLockable<PubSubLock>::try_lock_for;
  // As try_lock_for with an explicit lease for this acquisition (0:
  // watchdog), Redisson's tryLock(wait, lease, unit). std::invalid_argument
  // for a negative lease or one over 100 years, before anything is sent.
  bool try_lock_for(std::chrono::milliseconds wait, std::chrono::milliseconds lease);

 private:
  friend DeadlineLockable<PubSubLock>;
  friend FencingTokenMembers<PubSubLock>;
  bool acquire_until(detail::Clock::time_point deadline) { return acquire(deadline, lease_ms()); }

 public:
  // The drained thread pool's tryLockAsync(wait, lease): returns at once; the
  // future becomes true when the calling thread owns the lock, false when
  // `wait` ran out (wait <= 0: a single attempt, no subscription), or holds
  // the redis::Error. See the essay for threads and ownership.
  std::future<bool> try_lock_async(std::chrono::milliseconds wait, std::chrono::milliseconds lease);

  // Pre: held by this thread. Decrements; at zero deletes and publishes.
  // std::system_error / LockLost / redis::Error as in the essay (LockLost
  // also for each outer hold of a lost lease, without a round trip).
  void unlock();

  // This thread's hold count as this object records it (0: not held).
  std::int64_t hold_count() const { return holds_.count(client_.thread_owner()); }
  bool is_held_by_current_thread() const { return hold_count() > 0; }
  // token() (of the outermost hold), fenced(), fence_key(), name():
  // FencingTokenMembers.
  const std::string& channel() const noexcept { return channel_; }
  // Watchdog mode: what the renewals found wrong with the calling thread's
  // hold since its outermost acquisition (the worse verdict: kLost over
  // kRenewalFailed), nullopt if nothing or if it holds nothing renewed. No
  // round trip: one mutex and a map lookup. See "Lease at risk".
  std::optional<LeaseRisk> lease_risk() const;
  bool lease_at_risk() const { return lease_risk().has_value(); }
  // Successful watchdog renewals so far.
  std::uint64_t watchdog_renewals() const noexcept { return renewals_.load(std::memory_order_relaxed); }
  // Renewals that failed or found the hold lost (each a LeaseRisk verdict,
  // reported or not: a hold reports each kind once).
  std::uint64_t failed_renewals() const noexcept { return failed_renewals_.load(std::memory_order_relaxed); }
  // Acquire-script runs so far (successful or not).
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
  // Arrivals that queued behind this process's waiters without a first
  // attempt ("No barging within a process" in the essay).
  std::uint64_t skipped_attempts() const noexcept { return skipped_.load(std::memory_order_relaxed); }
  // Final unlocks whose wake-up PUBLISH the server refused (see the essay):
  // the lock was released all the same.
  std::uint64_t unpublished_releases() const noexcept { return unpublished_.load(std::memory_order_relaxed); }

 private:
  using Clock = std::chrono::steady_clock;
  struct AsyncRequest;
  // One acquire script's answer: acquired, or the holder's remaining lease
  // (-1 if none).
  using Attempt = detail::WaitAttempt;
  // One watchdog-mode hold of one owner, from its outermost acquisition to
  // its final unlock (or loss).
  struct Watch {
    LeaseRenewer::Id job = 0;      // its renewal on the Client's timer
    std::uint64_t generation = 0;  // tells a late renewal of an earlier hold from this one's
    bool renewing = true;          // false once a renewal found it lost
    std::optional<LeaseRisk> risk;
  };

  std::chrono::milliseconds lease_ms() const noexcept { return options_.lease; }
  bool acquire(Clock::time_point deadline, std::chrono::milliseconds lease);
  // One acquire script; on success records the hold and, in watchdog mode
  // (lease 0), starts watching the owner.
  Attempt attempt(const std::string& owner, std::chrono::milliseconds lease);
  // The restore script: the server's count for `owner` brought down to
  // `want` (see "Unknown outcomes" in the essay).
  void restore(const std::string& owner, std::int64_t want);
  // The hold was found gone: forget it, owe `owed` outer unlocks a
  // LockLost each, and throw LockLost.
  [[noreturn]] void lose(const std::string& owner, std::int64_t owed, bool taken_by_other);
  // The lease an acquisition with `lease` takes (0: the watchdog's).
  std::chrono::milliseconds effective_lease(std::chrono::milliseconds lease) const noexcept {
    return lease.count() > 0 ? lease : options_.watchdog_lease;
  }
  // Starts renewing the owner's hold, unless it is renewed already.
  void watch(const std::string& owner);
  // Stops renewing it (a run in progress is not waited for) and forgets
  // its risk.
  void unwatch(const std::string& owner);
  // One renewal (on the timer thread): records and reports a verdict.
  // Returns whether to renew again.
  bool renew(const std::string& owner, std::uint64_t generation);
  void async_loop();

  Client& client_;
  std::string name_;
  std::string channel_;
  std::string fence_key_;
  Options options_;
  detail::LocalHolds holds_;
  detail::LocalHolds tokens_;  // fenced: owner -> token of its outermost hold (one number per owner)
  detail::InDoubt doubts_;     // owners whose last attempt or release had an unknown outcome
  // Outer holds of a lost lease whose unlock() is still to come.
  struct LostHolds {
    std::int64_t owed = 0;
    bool taken_by_other = false;
  };
  std::mutex lost_mu_;
  std::unordered_map<std::string, LostHolds> lost_;  // guarded by lost_mu_
  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> failed_renewals_{0};
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> unpublished_{0};

  // Watchdog: owner -> its hold's renewal (jobs on client_.lease_renewer()).
  mutable std::mutex wd_mu_;
  std::map<std::string, Watch> watched_;  // guarded by wd_mu_
  std::uint64_t watch_generation_ = 0;    // guarded by wd_mu_

  // Async worker.
  std::mutex async_mu_;
  std::condition_variable async_cv_;
  std::deque<AsyncRequest> async_new_;
  bool async_stop_ = false;
  Subscriber::Subscription* async_poke_target_ = nullptr;  // the worker's, when it has one
  std::thread async_worker_;
};

}  // namespace locklab::redis
