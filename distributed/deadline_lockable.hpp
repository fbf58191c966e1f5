// deadline_lockable.hpp — the acquire half of every Redis lock's public
// surface (lock, try_lock, try_lock_for, try_lock_until), written once on
// top of one member of the lock: an acquisition that gives up at a
// steady_clock deadline. A CRTP base (no virtual call, no state), as
// FlagSpinLock and TimedTryLock are for the local locks and as Rust's
// parking_lot builds its lock API on a raw lock's few methods.
//
// What Derived must provide
// -------------------------
//   bool acquire_until(std::chrono::steady_clock::time_point deadline);
// reachable from this class: private with `friend DeadlineLockable<D>;`, or
// protected. It tries to take the lock for the calling thread until
// `deadline` and returns whether it did. Its rules, which every lock here
// keeps and documents in its own essay:
//   - a deadline that has already passed (the `now` that try_lock() passes
//     included) is exactly ONE attempt: no sleep, no subscription, no queue;
//   - a false return comes no earlier than the deadline (the last attempt is
//     made at it);
//   - time_point::max() means "no deadline";
//   - misuse and Redis failures throw (std::system_error, LockLost,
//     redis::Error ... as the lock's essay says); a timeout is not an error.
// Derived provides unlock() itself, and may declare its own lock() (RedLock
// bounds it and throws NoQuorum) or further try_lock_for overloads (with
// `using DeadlineLockable<D>::try_lock_for;`, as PubSubLock's lease overload).
//
// What the members mean
// ---------------------
//   lock()              acquire_until(time_point::max()): waits without a
//                       time limit.
//   try_lock()          acquire_until(now): one attempt.
//   try_lock_for(d)     acquire_until(now + d), rounded up to the clock's
//                       tick and saturating at max(); d <= 0 (any
//                       representation, 0.0 s included) is one attempt
//                       (detail::deadline_after).
//   try_lock_until(t)   a steady_clock t as it is (rounded up); a t on any
//                       other clock (system_clock ...) converted once, at the
//                       call, by what is left until it (detail::to_steady),
//                       so a t already past is one attempt and a clock
//                       adjustment after the call does not move the wait.
// Together with Derived's unlock() these satisfy the standard Lockable and
// TimedLockable requirements: std::lock_guard, std::scoped_lock (std::lock),
// std::unique_lock with its timed constructors and members all work
// (tests/distributed/deadline_lockable_test.cpp checks each lock type).
//
// Replication: every member that acquired asks the Client for WAIT when its
// Options::wait_replicas > 0 (replica_wait.hpp), for a Derived with the
// `Client& client_` and `std::string name_` members every single-server lock
// has (not RedLock, whose nodes are independent primaries, nor
// FencedSpinLock, whose SpinLock asks already); too few acknowledgements:
// unlock() and NotReplicated.
//
// Costs: nothing beyond Derived's acquire_until (and the WAIT when asked
// for): the members are inline and read the clock at most once.
#pragma once

#include <chrono>

#include "distributed/lock_support.hpp"
#include "distributed/replica_wait.hpp"

namespace locklab::redis {

template <class Derived>
class DeadlineLockable {
 public:
  // Waits without a time limit. Throws as Derived's essay says.
  void lock() { (void)acquire(detail::Clock::time_point::max()); }
  // One attempt; true if the calling thread now holds the lock.
  bool try_lock() { return acquire(detail::Clock::now()); }
  // Tries until `timeout` has passed (<= 0: one attempt).
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return acquire(detail::deadline_after(timeout));
  }
  // Tries until `deadline`, on any clock (already past: one attempt).
  template <class C, class D>
  bool try_lock_until(const std::chrono::time_point<C, D>& deadline) {
    return acquire(detail::to_steady(deadline));
  }

 protected:
  DeadlineLockable() = default;
  ~DeadlineLockable() = default;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  // The one place the Lockable surface finishes an acquire.
  bool acquire(detail::Clock::time_point deadline) {
    if (!self().acquire_until(deadline)) return false;
    if constexpr (requires(Derived& d) {
                    d.client_.options();
                    d.name_;
                  }) {
      Derived& d = self();
      detail::confirm_replicated(d.client_, d.name_, [&d] { d.unlock(); });
    }
    return true;
  }
};

}  // namespace locklab::redis
