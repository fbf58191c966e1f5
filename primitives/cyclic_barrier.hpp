// cyclic_barrier.hpp — java.util.concurrent.CyclicBarrier: `parties`
// threads wait for each other, the last to arrive runs an optional action,
// and all go on together; then the barrier is ready for the next round (a
// generation). If any party gives up, every party of that round learns it.
//
// What it guarantees
// ------------------
// A generation is the set of await() calls of one round. It ends in one of
// two ways, and every party of it sees the same one:
//   tripped  the parties-th thread arrived: it runs the action (if any),
//            then every party returns its arrival index (parties - 1 for
//            the first to arrive, 0 for the last, Java's numbering), and
//            the next generation starts empty;
//   broken   a party timed out, reset() was called, or the action threw:
//            every party still waiting throws BrokenBarrier, the one that
//            timed out throws BarrierTimeout (a BrokenBarrier), the action's
//            thread rethrows the action's exception; and every await()
//            after that throws BrokenBarrier at once until reset().
// - No party returns from a tripped generation before the last one has
//   arrived and the action has returned; everything every party did before
//   await(), and the action, happen-before every party's return (all of it
//   runs under one lock).
// - A timed await that runs out breaks the barrier for everyone (Java's
//   choice: a round with a missing party can never trip, so the others
//   must not wait for it forever). A zero or negative timeout on a barrier
//   that would not trip now breaks it at once (Java's too).
// - reset(): breaks the current generation (its waiters throw
//   BrokenBarrier) and starts a fresh one; a barrier that was broken is
//   usable again.
// - Invalid: parties < 1 (std::invalid_argument).
//
// How it works
// ------------
// Java's design, on our ReentrantLock and its Condition: one lock guards
// the count of arrivals and the broken flag; waiters await the condition.
// Java tells generations apart by a Generation object each waiter keeps;
// here each waiter keeps its Arrival on its own stack, in an intrusive list
// of the generation's waiters, and the thread that ends the generation
// writes the outcome (tripped or broken) into every Arrival under the lock.
// A waiter reads only its own Arrival, so it learns its own generation's
// fate however many generations pass before it is scheduled again, and no
// allocation is needed. A barrier is not a hot path (one trip per round of
// work), so the lock's cost is what it is: one lock round trip per party
// and one condition wake-up per waiting party at the trip.
//
// Memory orders: everything is under lock_ (its acquire/release); no
// atomics of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>

#include "primitives/deadline.hpp"
#include "primitives/reentrant_lock.hpp"

namespace locklab {

// The generation this party belonged to was broken (another party timed
// out, reset() was called, or the barrier action threw), or the barrier was
// already broken when it arrived.
class BrokenBarrier : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// This party's own timed await ran out; it broke the barrier for the rest.
class BarrierTimeout : public BrokenBarrier {
 public:
  using BrokenBarrier::BrokenBarrier;
};

class CyclicBarrier {
 public:
  // Throws std::invalid_argument unless parties >= 1. The action, if any,
  // runs in the last-arriving thread of each generation before anyone
  // leaves.
  explicit CyclicBarrier(int parties, std::function<void()> action = {});
  // Pre: no thread waits in it.
  ~CyclicBarrier() = default;
  CyclicBarrier(const CyclicBarrier&) = delete;
  CyclicBarrier& operator=(const CyclicBarrier&) = delete;

  // Waits for the generation to trip; returns the arrival index. Throws
  // BrokenBarrier (see the essay), or the action's exception.
  int await() { return await_steady(std::chrono::steady_clock::time_point::max()); }

  // As await(), giving up at now + timeout: then throws BarrierTimeout and
  // the barrier is broken for every other party.
  template <class Rep, class Period>
  int await_for(const std::chrono::duration<Rep, Period>& timeout) {
    return await_steady(timeout <= timeout.zero() ? std::chrono::steady_clock::time_point::min()
                                                  : detail::steady_deadline_after(timeout));
  }
  template <class Clock, class Duration>
  int await_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return await_steady(detail::to_steady_deadline(deadline));
  }

  // Breaks the current generation (its waiters throw BrokenBarrier) and
  // starts a new one.
  void reset();

  int parties() const noexcept { return parties_; }
  // Snapshots.
  bool is_broken() const;
  int number_waiting() const;

 private:
  // A waiting party's record, on its stack.
  struct Arrival {
    enum class Outcome : std::uint8_t { kWaiting, kTripped, kBroken };
    Outcome outcome = Outcome::kWaiting;
    Arrival* next = nullptr;
  };

  int await_steady(std::chrono::steady_clock::time_point deadline);
  // Pre: lock_ held. End the generation; every waiting Arrival gets `how`.
  void end_generation_locked(Arrival::Outcome how);

  mutable ReentrantLock lock_;
  ReentrantLock::Condition tripped_{lock_};
  const int parties_;
  std::function<void()> action_;
  // Guarded by lock_.
  int waiting_ = 0;
  bool broken_ = false;
  Arrival* arrivals_ = nullptr;
};

}  // namespace locklab
