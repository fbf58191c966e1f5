// count_down_latch.hpp — the Redisson RCountDownLatch analogue: a count in
// Redis that any process counts down, and waiters, in any process, that
// pass once it reaches zero.
//
// The protocol
// ------------
// State: one string key <name> holding the count while it is above zero;
// no key means zero (the latch is open). The release channel is
// derived_key(name, "channel") (lock_keys.hpp).
//   try_set_count(n)  SET <name> n NX: succeeds only while the latch is at
//                     zero (no key), as Redisson's trySetCount: a latch
//                     that is counting cannot be re-armed under its
//                     waiters. 1 round trip.
//   count_down()      one script: DECR if the key exists; at zero DEL and
//                     PUBLISH (SPUBLISH on a cluster, as the relay:
//                     publishing_script.hpp; pcall, after the DEL: a refused wake-up
//                     never leaves the latch closed). A count_down at zero
//                     does nothing, like Java's. 1 round trip.
//   get_count()       GET (absent: 0). 1 round trip.
//   await_for(t)      GET; if 0, true. Else subscribe (the Client's one
//                     Subscriber), GET again (an opening published before
//                     the subscription was live), then sleep until a
//                     message, re-checking with GET after each wake-up,
//                     until zero or the deadline.
// Waking everyone: the Subscriber grants one wake permit per message
// (wake-one, subscriber.hpp), but a latch must open ALL its waiters. So
// the waiter that a message woke and that finds the latch open (a) pokes
// every other waiter parked on this object (no round trip) and (b)
// publishes the opening once more (a relay), which wakes the oldest
// waiter without a permit in every process, including waiters on other
// objects of the same name, who relay in turn (a relay the server refuses
// is dropped: those others then pass at their own re-check or deadline). Each waiter passes once;
// relays are at most one per waiter woken by a message, and none are sent
// by poked waiters or by waiters that found the latch open on their own
// GET. Messages carry no state: every waiter decides by its own GET, so a
// relay that arrives after the latch was re-armed wakes nobody wrongly.
//
// Outcomes
// --------
// - try_set_count(n < 0) or await_for(t < 0): std::invalid_argument,
//   nothing sent. (A zero wait is one GET.) try_set_count(0) writes
//   nothing and returns whether the latch is open.
// - A foreign value under <name>: count_down is Error(kServer) quoting
//   Redis (its DECR fails before any write), get_count / await_for
//   Error(kProtocol) quoting the text; nothing changed.
// - Redis unreachable / restarted: redis::Error within the Client's
//   timeouts; a waiter never sleeps past its deadline. A waiter for a
//   latch whose last count_down was lost with the server (a restart
//   without persistence) sees no key, i.e. an open latch: the count is
//   only as durable as Redis.
// - No lease: the count has no TTL; a process that dies before its
//   count_down leaves the latch closed (waiters time out). Callers bound
//   every wait with await_for.
//
// When to use it: starting or finishing a phase across processes (all
// workers ready, all shards migrated). For mutual exclusion, a lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/lock_support.hpp"
#include "distributed/subscriber.hpp"

namespace locklab::redis {

class CountDownLatch {
 public:
  // Binds to `name` and its channel on `client` (which must outlive the
  // latch). Sends nothing. std::invalid_argument for a name check_lock_name
  // refuses.
  CountDownLatch(Client& client, std::string name);
  CountDownLatch(const CountDownLatch&) = delete;
  CountDownLatch& operator=(const CountDownLatch&) = delete;

  // Sets the count to n if the latch is open (no count); true if set.
  bool try_set_count(std::int64_t n);
  // One count less; at zero the latch opens and its waiters are woken.
  // Returns the count left (0 also when it already was 0).
  std::int64_t count_down();
  std::int64_t get_count();
  // Waits until the count is zero or `timeout` has passed; true if zero.
  bool await_for(std::chrono::milliseconds timeout);
  // Without a time limit.
  void await() { (void)wait_until(detail::Clock::time_point::max()); }

  const std::string& name() const noexcept { return name_; }
  const std::string& channel() const noexcept { return channel_; }
  // Relay PUBLISHes this object's waiters sent ("Waking everyone").
  std::uint64_t relays() const noexcept { return relays_.load(std::memory_order_relaxed); }

 private:
  bool wait_until(detail::Clock::time_point deadline);

  Client& client_;
  std::string name_;
  std::string channel_;
  std::mutex parked_mu_;
  std::vector<Subscriber::Subscription*> parked_;  // guarded by parked_mu_
  std::atomic<std::uint64_t> relays_{0};
};

}  // namespace locklab::redis
