// adaptive_lock.hpp — the adaptive Redis lock of the k6 lock table
// (docs/case-studies.md#the-k6-lock-table): spin for a budget learned per
// key, then sleep on the release channel like PubSubLock. The distributed
// twin of primitives/adaptive_mutex.hpp — and, like it, it spins against a
// LOCAL signal: one thread per lock object waits for this object's own
// release counter, not for the server.
//
// The protocol
// ------------
// State in Redis: a string at <name> holding the owner token (Client::
// thread_owner()) with PX = lease, exactly SpinLock's key; releases are
// announced on <name>~channel (lock_keys.hpp). In this process: a release epoch per lock
// object, bumped by every unlock() that deleted the key, and one spinner
// slot.
//   acquire, queued: if waiters of this process already sleep on the
//     channel (Subscriber::join_if_subscribed finds members ahead), join
//     them and go straight to the sleep below: no attempt, no spin (no
//     barging past one's own process, as PubSubLock).
//   acquire, phase 0:  SET <name> <token> NX PX <lease>     1 round trip
//   acquire, phase 1 (spin, only the thread that takes the slot):
//     watch the release epoch, yielding between looks, until the budget
//     (below) or the caller's deadline; each time it moves, one SET NX.
//     Nothing is sent while it stands still.
//   acquire, phase 2 (park; the other threads at once):
//     1. subscribe to <name>~channel through the Client's one shared pub/sub
//        connection (Subscriber; no round trip if another waiter of this
//        process already listens),
//     2. attempt ONCE MORE after the subscription is live — the acquire
//        script: SET NX PX, else return the holder's PTTL. A release between
//        the last attempt and step 1 published to nobody; without this
//        re-check the waiter would sleep until the holder's lease ran out,
//     3. sleep until a release message (Subscriber wakes ONE local waiter per
//        message), the holder's remaining lease (the PTTL of step 2: a
//        crashed holder publishes nothing) or the caller's deadline,
//     4. attempt with a bare SET NX; on failure back to 3
//        (wait_for_release.hpp, shared with PubSubLock). A failure there
//        means the lock was taken since the release; the next sleep is
//        bounded by THIS lock's lease as an estimate of the new holder's,
//        and the attempt after such an estimate runs out is the script
//        again, which reads the true PTTL. (The script costs the server a
//        Lua call per attempt; the bare SET NX keeps a contended
//        acquisition under 100 us of Redis CPU here.)
//   release: EVALSHA compare-and-delete-and-publish   1 round trip
//            if GET name == token then DEL name; PUBLISH <name>~channel
//            (SPUBLISH on a cluster: publishing_script.hpp)
//            then bump the local release epoch.
//
// Why spin against a local signal
// -------------------------------
// The k6 lock table's original spun on back-to-back SET NX. Measured in
// `redis_locks` (quick mode, 1 ms hold), that was 27-39 round trips and
// 500-800 us of Redis CPU per acquisition at 4-64 waiters: about half of a
// Redis core for one hot key, to win hand-offs a few tens of microseconds
// sooner than pub/sub. A holder in the same process announces its release
// to the spinner for free, so the spin keeps its point (a hand-off without
// a subscription or a thread wake-up) at no cost to the server; one spinner
// per object keeps the CPU it burns to one thread. The price: a release by
// ANOTHER process is seen only at the end of the spin (then the re-check
// of phase 2 finds it), and such spins run out, so the budget shrinks and
// the lock behaves like PubSubLock against remote holders. Figures before
// and after: benches/redis_locks_bench.cpp and the reference results.
//
// The spin budget
// ---------------
// One budget per lock object (bind one object per key and share it between
// threads, as with every lock here): Options::initial_spin (5 ms, the original
// default) kept within [min_spin, max_spin] = [0.2 ms, 20 ms].
//   - a spin that ended in the lock (a release came within the budget)
//                                            -> budget += budget / 4
//   - a spin that ran out of budget (the holder held on longer, released
//     from another process, or another thread won)
//                                            -> budget -= budget / 2
//   - a first SET NX that succeeds, or no spin (slot taken, queued): says
//     nothing about spinning: unchanged.
// Shrinking is faster than growing because a failed spin costs a thread's
// CPU for the whole budget, while a successful one only saves the
// subscription and a wake-up. min_spin > 0 keeps a probe alive: when
// contention falls, short spins start winning again and the budget
// recovers. The budget is a relaxed atomic read-modify-written without a
// lock: racing updates may lose one another, which only makes the heuristic
// a little stale (as in AdaptiveMutex), never incorrect.
//
// What it guarantees
// ------------------
// - Mutual exclusion while leases hold (SET NX); not reentrant; no
//   watchdog: a critical section longer than `lease` is not protected and
//   unlock() then reports LockLost.
// - Uncontended: exactly 2 round trips per lock/unlock pair (SET NX, release
//   script), no subscription, no thread.
// - Short waits on a holder of this process (it releases within the
//   budget) cost one SET NX more and no subscription; long waits cost what
//   PubSubLock's do. Fairness as PubSubLock's within a process once a
//   queue has formed (newcomers queue behind parked waiters); the spinner
//   can still take a release from a parked waiter woken for it (that waiter
//   keeps its place and gets the next one). The original lock, whose every
//   waiter spun on the server, let spinners win most races: its authors
//   measured p95 211 ms at 50 clients against Redisson's 50 ms for this
//   reason, and 5.51 ms (the best) at 5.
//
// Outcomes (each tested in tests/distributed/adaptive_lock_test.cpp)
// --------
// - unlock() by a thread that does not hold it (per this object's record):
//   std::system_error(operation_not_permitted); nothing is sent.
// - unlock() after the lease expired: nothing deleted, nothing published,
//   LockLost (taken_by_other() if another owner holds the key now). This
//   thread no longer holds it.
// - lock()/try_lock*() by the holder: not reentrant ->
//   std::system_error(resource_deadlock_would_occur), nothing sent.
// - try_lock(), try_lock_for(<= 0), a past try_lock_until: exactly one SET
//   NX, no spin, no subscription (even behind a queue). A false from a timed try comes no earlier
//   than the deadline (the spin and the sleeps are cut at the deadline, then
//   one last attempt is made), and the budget is not charged for a spin the
//   deadline cut short.
// - Redis unreachable, killed or restarted: the attempt, the subscription
//   or the re-subscription throws redis::Error within the Client's timeouts;
//   a parked waiter is woken by the lost connection (kReconnected), never
//   sleeps past its deadline or the holder's lease. unlock() that throws
//   redis::Error forgets the hold.
// - A SET NX, acquire script or release that fails with an unknown outcome
//   (kTimeout or kIo: the server may have run it and the reply was lost):
//   before the error propagates (so at most one command_timeout later), the
//   release script runs once more for this thread's token (its source sent
//   with EVAL: no script load needed; it publishes if it deletes), so a SET
//   that ran unseen leaves no hold that blocks this thread and every waiter
//   until the lease ends. If that fails too, or the command failed with
//   kConnect (it never reached the server), it runs before this thread's
//   next acquire or release through this object (which throws its
//   redis::Error while it keeps failing); meanwhile the key expires with its
//   lease. (Tested for every lock in tests/distributed/redis_lock_outcomes.hpp.)
// - A key of another type under `name`: SET NX fails (the lock looks held)
//   and the acquire script's PTTL of a persistent key is -1, so a waiter
//   sleeps until its deadline; unlock() of such a key gets Error(kServer).
// - A holder that crashes (publishes nothing): its waiters take the lock
//   once its lease has run out, at the latest at the end of the longer of
//   its lease and this lock's own (the estimate of step 4), and never later
//   than their deadline.
// - The server refuses the release's wake-up PUBLISH (an ACL user allowed
//   the key but not the channel, e.g. Redis 7's acl-pubsub-default
//   resetchannels): the key is deleted and unlock() returns normally — a
//   released lock is never reported as not released. unpublished_releases()
//   counts these; waiters elsewhere learn of the release at their lease
//   bound. (Such a user's own waiters get the SUBSCRIBE's NOPERM as
//   Error(kServer) at once.)
// - A lease over 100 years (detail::kMaxDuration): std::invalid_argument at
//   construction. A holder's PTTL beyond the steady clock's range (another
//   client's lease) is waited for as "until the deadline".
//
// Fencing tokens (Options::fenced, fencing.hpp)
// --------------
// With fenced = true every attempt, spinning or parked, is one script: SET
// NX PX and, on success, INCR <name>~fence (fencing.hpp's shared fenced SET
// NX), so the winner holds a token from the same round trip: still 2 round
// trips per uncontended lock/unlock. token() returns it
// while the thread holds the lock. Off by default: then the spin is bare SET
// NX commands and no counter key exists.
//
// When to use it: threads of one process contending for short critical
// sections, where most waits end within a few milliseconds (the k6 lock
// table's 5-client case): the hand-off then needs no subscription and no
// wake-up. Across many processes it is PubSubLock with a spin that runs
// out; use PubSubLock (reentrant, watchdog) or FairLock (FIFO) there.
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

class AdaptiveLock : public DeadlineLockable<AdaptiveLock>, public FencingTokenMembers<AdaptiveLock> {
 public:
  struct Options {
    std::chrono::milliseconds lease{3'000};  // the original lockTtl
    std::chrono::microseconds initial_spin{5'000};
    std::chrono::microseconds min_spin{200};
    std::chrono::microseconds max_spin{20'000};
    // Sleep between two looks at the release epoch (0: yield the CPU and
    // look again; the original slept between two SET NX with
    // Thread.onSpinWait()).
    std::chrono::microseconds spin_pause{0};
    // Take a fencing token (INCR <name>~fence) in each successful attempt.
    bool fenced = false;
  };

  // Binds to the key `name` and the channel derived_key(name, "channel")
  // (lock_keys.hpp) on `client` (which must outlive the lock). Sends
  // nothing. std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp), a lease <= 0, min_spin <= 0, min_spin > max_spin, an
  // initial_spin outside [min_spin, max_spin], a negative spin_pause, or a
  // lease, max_spin or spin_pause over 100 years (detail::kMaxDuration).
  AdaptiveLock(Client& client, std::string name);
  AdaptiveLock(Client& client, std::string name, Options options);
  // Pre: no thread holds or waits for it through this object.
  ~AdaptiveLock() = default;
  AdaptiveLock(const AdaptiveLock&) = delete;
  AdaptiveLock& operator=(const AdaptiveLock&) = delete;

  // lock() spins, then parks, without a time limit; try_lock() is one SET
  // NX, no spin, no subscription; try_lock_for / try_lock_until spin and park
  // until the deadline (<= 0 or past: as try_lock()). DeadlineLockable;
  // throws as in the essay.
  // Pre: held by this thread. Compare-and-delete, publishes on success;
  // std::system_error / LockLost / redis::Error as in the essay.
  void unlock();

  bool is_held_by_current_thread() const { return holds_.count(client_.thread_owner()) > 0; }
  // token(), fenced(), fence_key(), name(): FencingTokenMembers.
  const std::string& channel() const noexcept { return channel_; }
  const Options& options() const noexcept { return options_; }
  // The current spin budget (see the essay).
  std::chrono::microseconds spin_budget() const noexcept {
    return std::chrono::microseconds(budget_us_.load(std::memory_order_relaxed));
  }
  // Acquisition attempts (SET NX or the acquire script) sent so far: the
  // cost to the server.
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
  // Acquisitions won while spinning / after parking (statistics).
  std::uint64_t spin_wins() const noexcept { return spin_wins_.load(std::memory_order_relaxed); }
  std::uint64_t park_wins() const noexcept { return park_wins_.load(std::memory_order_relaxed); }
  // Releases whose wake-up PUBLISH the server refused (see the essay): the
  // lock was released all the same.
  std::uint64_t unpublished_releases() const noexcept { return unpublished_.load(std::memory_order_relaxed); }

 private:
  friend DeadlineLockable<AdaptiveLock>;
  friend FencingTokenMembers<AdaptiveLock>;
  using Clock = std::chrono::steady_clock;
  bool acquire_until(Clock::time_point deadline);
  bool try_set(const std::string& owner);
  // The acquire script: true if acquired, else sets `pttl_ms` (-1 if none).
  bool try_script(const std::string& owner, std::int64_t& pttl_ms);
  bool run_script(const std::string& owner, std::int64_t& pttl_ms);  // try_script without the guard
  // After an unknown outcome: the release script (delete the key if it
  // holds this owner's token, and publish).
  void restore(const std::string& owner);
  void adjust_budget(bool spin_won);
  enum class Spin { kWon, kRanOut, kCutByDeadline, kSlotTaken };
  // Phase 1 (see the essay): waits for this object's release epoch to move
  // past `seen`, then attempts; until the budget or the deadline.
  // kSlotTaken: another thread of this object is spinning.
  Spin spin(const std::string& owner, std::uint64_t seen, Clock::time_point deadline);

  Client& client_;
  std::string name_;
  std::string channel_;
  std::string fence_key_;
  Options options_;
  detail::LocalHolds holds_;
  detail::LocalHolds tokens_;  // fenced: owner -> token of its hold (one number per owner)
  detail::InDoubt doubts_;     // owners whose last attempt or release had an unknown outcome
  std::atomic<std::int64_t> budget_us_;
  std::atomic<std::uint64_t> releases_{0};  // bumped by every unlock() that deleted the key
  std::atomic<bool> spinning_{false};       // the one spinner's slot
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> spin_wins_{0};
  std::atomic<std::uint64_t> park_wins_{0};
  std::atomic<std::uint64_t> unpublished_{0};
};

}  // namespace locklab::redis
