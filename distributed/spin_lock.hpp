// spin_lock.hpp — the Lettuce-style Redis lock of the stock test
// (docs/case-studies.md#stock-test-under-a-polling-lock): `SET name token NX
// PX lease`, and if that fails, sleep and try again.
//
// The protocol
// ------------
//   acquire: SET <name> <token> NX PX <lease>     1 round trip per attempt
//            nil -> sleep retry_interval (fixed) or 100, 150, 225 ... ms
//            (exponential, capped), optionally jittered, and try again
//   release: EVALSHA compare-and-delete           1 round trip
//            if GET name == token then DEL name   (else: not ours any more)
// The token is Client::thread_owner(): 128 random bits of the Client plus a
// number for the calling thread, so no other client can release our lock by
// accident, and another thread of this process cannot either.
//
// What it guarantees
// ------------------
// - Mutual exclusion while leases hold: SET NX is atomic, so at most one
//   token owns the key; the key disappears `lease` after the acquiring SET
//   whatever happens to the holder (no watchdog here). A critical section
//   longer than the lease is NOT protected: unlock() then reports LockLost.
// - Uncontended cost: exactly 2 round trips per lock/unlock pair.
// - No fairness and no wake-up: a waiter learns of a release only at its next
//   poll. With the stock test's fixed 50 ms interval the hand-off gap is
//   about interval/2 on average and up to one interval; in the k6 lock table
//   (docs/case-studies.md#the-k6-lock-table; polling every 100 ms) the
//   original authors measured p95 103.67 ms at 5 waiters (vs 6.97 ms with
//   Redisson's pub/sub), and 2.61 s at 50 waiters. Polling also costs Redis
//   one SET per waiter per interval whether or not the lock is free. This
//   lock exists to show that.
//
// The stock test's parameters (Options defaults): lease 100 ms (10 ms DB work
// + 3 ms network + 87 ms buffer), retry every 50 ms (lease/2); its cap of 80
// tries / 4 s is `try_lock_for(4s)`. Exponential backoff (Backoff::
// kExponential): 100, 150, 225 ... ms (retry_interval x multiplier^k), capped
// at max_interval (1 s); `jitter` in [0, 1] shortens each sleep by a random
// fraction of up to `jitter` (0.5: sleep between interval/2 and interval),
// which de-synchronises waiters that started together.
//
// Outcomes (each tested in tests/distributed/spin_lock_test.cpp)
// --------
// - unlock() by a thread that does not hold it (per this object's record):
//   std::system_error(operation_not_permitted); nothing is sent to Redis.
// - unlock() after the lease expired: the script deletes nothing and
//   unlock() throws LockLost (taken_by_other() tells whether someone else
//   holds it now). Either way this thread no longer holds it.
// - lock() / try_lock*() by the thread that holds it: not reentrant ->
//   std::system_error(resource_deadlock_would_occur), nothing sent.
// - Zero or negative timeouts, past deadlines: exactly one SET, no sleep.
//   A false return from try_lock_for/until comes no earlier than the
//   deadline: the last attempt is made at the deadline.
// - Redis unreachable, killed or slow: redis::Error from the attempt that
//   failed (kConnect / kIo / kTimeout), within the Client's timeouts; never a
//   hang past them. unlock() that throws redis::Error also forgets the hold.
// - An attempt or release that fails with an unknown outcome (kTimeout or
//   kIo: the server may have run it and the reply was lost): before the
//   error propagates (so at most one command_timeout later), the
//   compare-and-delete runs once more for this thread's token (its source
//   sent with EVAL: no script load needed), so a SET that ran unseen leaves
//   no hold that blocks this thread's next lock(), and everyone else, until
//   the lease ends. If that fails too, or the command failed with kConnect
//   (it never reached the server), it runs before this thread's next
//   acquire or release through this object (which throws its redis::Error
//   while it keeps failing); meanwhile the key expires with its lease.
//   (Tested for every lock in tests/distributed/redis_lock_outcomes.hpp.)
// - A key of another type under `name` (e.g. a hash): SET NX fails, so the
//   lock looks held (acquire times out); unlock() would get Error(kServer)
//   WRONGTYPE from the server.
//
// Fencing tokens (Options::fenced, fencing.hpp)
// --------------
// With fenced = true each attempt is one script instead of the bare SET:
// SET NX PX and, on success, INCR <name>~fence, so the holder gets a token
// in the same round trip (still 2 per lock/unlock; the first attempt on a
// Client also loads the script). token() returns it while the thread holds
// the lock. Off by default: then no script, no counter key.
//
// When to use it: almost never for a contended lock; it is the baseline the
// other locks improve on. Fine for rare, short, non-critical exclusion
// (a cron job), where its statelessness (no subscription, no thread) wins.
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

class SpinLock : public DeadlineLockable<SpinLock>, public FencingTokenMembers<SpinLock> {
 public:
  enum class Backoff { kFixed, kExponential };

  struct Options {
    std::chrono::milliseconds lease{100};
    std::chrono::milliseconds retry_interval{50};  // kExponential: the first sleep
    Backoff backoff = Backoff::kFixed;
    double multiplier = 1.5;                    // kExponential
    std::chrono::milliseconds max_interval{1'000};  // kExponential cap
    double jitter = 0.0;                        // 0: none; 0.5: sleep in [interval/2, interval]
    // Take a fencing token (INCR <name>~fence) in each successful attempt.
    bool fenced = false;
  };

  // Binds to the key `name` (and, fenced, derived_key(name, "fence")) on
  // `client` (which must outlive the lock). Sends nothing. Throws
  // std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp), a lease or interval <= 0 or over the maximum (100
  // years, detail::kMaxDuration), multiplier < 1, or jitter outside [0, 1].
  SpinLock(Client& client, std::string name);
  SpinLock(Client& client, std::string name, Options options);
  // Pre: no thread holds or waits for it through this object.
  ~SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  // lock() polls until acquired, without a time limit; try_lock() is one
  // SET NX; try_lock_for / try_lock_until poll until acquired or the
  // deadline (<= 0 or past: one try). DeadlineLockable; throws as in the essay.
  // Pre: held by this thread. Compare-and-delete; see the essay for
  // std::system_error, LockLost and redis::Error.
  void unlock();

  bool is_held_by_current_thread() const { return holds_.count(client_.thread_owner()) > 0; }
  // token(), fenced(), fence_key(), name(): FencingTokenMembers.
  const Options& options() const noexcept { return options_; }
  // SET NX commands (or fenced acquire scripts) sent so far, successful or
  // not: the polling cost.
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }

 private:
  friend DeadlineLockable<SpinLock>;
  friend FencingTokenMembers<SpinLock>;
  using Clock = std::chrono::steady_clock;
  bool acquire_until(Clock::time_point deadline);
  bool attempt(const std::string& owner);
  // After an unknown outcome: delete the key if it holds this owner's token.
  void restore(const std::string& owner);

  Client& client_;
  std::string name_;
  std::string fence_key_;
  Options options_;
  detail::LocalHolds holds_;
  detail::LocalHolds tokens_;  // fenced: owner -> token of its hold (one number per owner)
  detail::InDoubt doubts_;     // owners whose last SET or release had an unknown outcome
  std::atomic<std::uint64_t> attempts_{0};
};

class Script;

// SpinLock's release, also RedLock's on every node: the owner-checked
// compare-and-delete. KEYS[1] the lock, ARGV[1] the token; returns 1 if it
// deleted our key, -1 if the key holds someone else's token, 0 if no key.
const Script& compare_and_delete_script();

}  // namespace locklab::redis
