// red_lock.hpp — antirez's Redlock: one lock over N independent Redis
// servers (no replication between them), held when a majority granted it
// and there is still time left on the lease.
//
// The algorithm (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/)
// -------------
//   1. start = now; token = a value unique to this acquisition.
//   2. SET <name> <token> NX PX <lease> on all N nodes at once (one thread
//      per node but the first, which the caller's thread serves; each node's
//      own Client timeouts bound its answer).
//   3. elapsed = now - start; drift = lease x drift_factor + drift_floor
//      (1% + 2 ms by default: clocks of different machines run at slightly
//      different rates, and the lease is measured by each server's clock);
//      validity = lease - elapsed - drift.
//   4. Held iff at least quorum = N/2 + 1 nodes said OK and validity > 0;
//      the holder may trust the lock until start + lease - drift
//      (validity()).
//   5. Otherwise: compare-and-delete the token on ALL nodes (a node that
//      timed out may have set it), sleep a random delay in
//      [retry_delay/2, 3 x retry_delay/2] (so contenders that collided do
//      not collide again in lockstep), and retry from 1 until the deadline.
//   Release: compare-and-delete on all nodes, in parallel.
//
// What it guarantees — and what it does not
// -----------------------------------------
// - Survives the crash of a minority: with 3 nodes, one may be down (or
//   answer errors) and the lock still works; with 2 down nobody acquires.
// - Mutual exclusion holds while every clock involved advances at roughly
//   the same rate (bounded drift) and no holder is paused past validity().
//   Those are timing assumptions, not facts (Kleppmann's critique): a
//   node's clock jump, a node restarted without persistence (its key is
//   gone; antirez's fix is to delay its restart past the maximum lease), or
//   a process pause between checking validity() and writing break it. No
//   fencing token comes with it either: N servers have no common counter
//   (fencing.hpp explains what would). Use it where a rare double holder
//   costs efficiency, not correctness — or check a fencing token at the
//   resource anyway.
// - Tokens: this object's first Client's thread_owner() plus a per-
//   acquisition number, so a late release of an old acquisition cannot
//   delete a newer one's key.
//
// Outcomes (each tested in tests/distributed/red_lock_test.cpp)
// --------
// - Node failures during acquire are not errors: a node that cannot be
//   reached, times out or answers an error simply does not vote (counted in
//   node_errors()). If fewer than a quorum can vote, try_lock* returns false
//   at its deadline.
// - A node that is down when the lock is built: build the nodes' Clients
//   with Client::Options::lazy_connect, so that neither they nor the lock
//   need a connection to exist; such a node's vote is an error (its
//   connect_timeout spent per attempt) until it comes back, and then it
//   votes again with nothing to reconfigure.
// - lock() is bounded: it retries for Options::lock_timeout (default 10 s,
//   50 attempts at the default retry_delay; node-redlock bounds its retries
//   the same way) and then throws NoQuorum, whose message and votes() give
//   each node's vote in the last attempt: granted, refused (another owner
//   holds it) or the error text. Never redis::Error.
// - unlock(): deleted on >= quorum nodes: returns. A majority of the
//   answers said "not ours" (gone, or another owner): LockLost
//   (taken_by_other() if any node had another owner's token). Neither
//   (unreachable nodes left it undecided): redis::Error of the first failing
//   node's kind, naming how many nodes confirmed. Either way this thread no
//   longer holds it; keys that could not be deleted expire with the lease.
// - unlock() by a non-holder: std::system_error(operation_not_permitted),
//   nothing sent. Locking again while holding: std::system_error(
//   resource_deadlock_would_occur), nothing sent. Not reentrant.
// - Zero or negative waits, past deadlines: exactly one attempt.
// - A lease so short that drift alone eats it (lease x (1 - drift_factor) <=
//   drift_floor, e.g. 2 ms) can never be acquired: every attempt releases
//   what it set and fails.
//
// What it costs: per attempt N commands on N connections in parallel
// (latency = the slowest answering node, bounded by its timeouts) plus N-1 thread
// starts (std::async, some tens of microseconds each); release the same.
// A failed attempt costs another N for the release. Keep each Client's
// connect/command timeouts well below the lease (the redis.io page: 5-50 ms
// for a 10 s lease), or a dead node eats the validity.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/lock_support.hpp"

namespace locklab::redis {

// RedLock::lock() gave up after Options::lock_timeout without a quorum.
// what(): "RedLock 'name': no quorum after N attempts in T ms (granted by G
// of N nodes, quorum Q); last attempt: host:port granted, host:port
// refused, host:port error: <redis::Error text>".
class NoQuorum : public std::runtime_error {
 public:
  struct Vote {
    enum class Kind { kGranted, kRefused, kError };
    std::string node;   // host:port
    Kind kind;
    std::string error;  // kError: the redis::Error's message; else empty
  };
  NoQuorum(const std::string& message, std::vector<Vote> votes, std::uint64_t attempts)
      : std::runtime_error(message), votes_(std::move(votes)), attempts_(attempts) {}
  // One per node, in the order the lock was given them: the last attempt.
  const std::vector<Vote>& votes() const noexcept { return votes_; }
  // Attempts this lock() call made.
  std::uint64_t attempts() const noexcept { return attempts_; }

 private:
  std::vector<Vote> votes_;
  std::uint64_t attempts_;
};

// No fencing members (FencingTokenMembers): N servers have no common counter.
class RedLock : public DeadlineLockable<RedLock> {
 public:
  struct Options {
    std::chrono::milliseconds lease{10'000};
    std::chrono::milliseconds retry_delay{200};  // mean of the random sleep between attempts
    double drift_factor = 0.01;                  // drift = lease x drift_factor + drift_floor
    std::chrono::milliseconds drift_floor{2};
    std::chrono::milliseconds lock_timeout{10'000};  // lock() gives up after this: NoQuorum
  };

  // Binds to the key `name` on every node (the Clients must outlive the
  // lock; each should point at a different, independent server; build them
  // with lazy_connect if a node may be down now). Sends nothing.
  // std::invalid_argument for no nodes, a null or repeated Client, a name
  // check_lock_name refuses (lock_keys.hpp: RedLock derives no key, but a
  // name may never be another lock's derived key), lease, retry_delay or
  // lock_timeout <= 0, drift_factor
  // outside [0, 1) or a negative drift_floor; lease, retry_delay,
  // lock_timeout or drift_floor over 100 years (detail::kMaxDuration).
  RedLock(std::vector<Client*> nodes, std::string name);
  RedLock(std::vector<Client*> nodes, std::string name, Options options);
  RedLock(const RedLock&) = delete;
  RedLock& operator=(const RedLock&) = delete;

  // Retries until acquired or Options::lock_timeout has passed, then
  // throws NoQuorum with the last attempt's votes. redis::Error is never
  // thrown by acquisition. (Hides DeadlineLockable's unbounded lock().)
  void lock();
  // try_lock() is one attempt; try_lock_for / try_lock_until retry until the
  // deadline (<= 0 or past: one attempt). DeadlineLockable.
  // Pre: held by this thread. See the essay for LockLost / redis::Error.
  void unlock();

  // How long the calling thread may still trust its hold: start + lease -
  // drift - now, at least 0; 0 if it does not hold the lock. Always below
  // the lease.
  std::chrono::milliseconds validity() const;
  bool is_held_by_current_thread() const;

  std::size_t node_count() const noexcept { return nodes_.size(); }
  std::size_t quorum() const noexcept { return nodes_.size() / 2 + 1; }
  const std::string& name() const noexcept { return name_; }
  const Options& options() const noexcept { return options_; }
  // Acquisition attempts (rounds of N SETs) so far.
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
  // Node commands that failed with a redis::Error (acquire and release).
  std::uint64_t node_errors() const noexcept { return node_errors_.load(std::memory_order_relaxed); }

 private:
  friend DeadlineLockable<RedLock>;
  struct Hold {
    std::string token;
    detail::Clock::time_point valid_until;
  };
  // Per node: 1 done (set / deleted ours), 0 refused / gone, -1 another
  // owner's token (release only), -2 a redis::Error (message in errors).
  struct Round {
    std::vector<int> results;
    std::vector<std::string> errors;
    Error::Kind first_error_kind = Error::Kind::kConnect;
    std::size_t count(int v) const;
  };

  // `last`, if given, receives the final attempt's round and the number of
  // attempts made (for lock()'s NoQuorum).
  bool acquire_until(detail::Clock::time_point deadline, Round* last = nullptr, std::uint64_t* attempts = nullptr);
  NoQuorum no_quorum(const Round& last, std::uint64_t attempts, std::chrono::milliseconds waited) const;
  Round set_all(const std::string& token);
  Round release_all(const std::string& token);
  template <class F>
  Round on_all(F per_node);

  std::vector<Client*> nodes_;
  std::string name_;
  Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Hold> holds_;  // thread owner -> its hold
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> node_errors_{0};
  std::atomic<std::uint64_t> acquisitions_{0};  // makes tokens unique per acquisition
};

}  // namespace locklab::redis
