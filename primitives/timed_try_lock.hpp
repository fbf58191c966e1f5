// timed_try_lock.hpp — the timed tries (try_lock_for, try_lock_until) that
// every parking mutex here offers, written once on top of two members of
// the lock: try_lock() and an out-of-line slow path that waits until a
// steady_clock deadline. A CRTP base (no virtual call, no extra state), so
// FutexMutex and AdaptiveMutex share one set of rules:
//   - a zero or negative duration, or a deadline already past, is exactly
//     one try_lock() (Java's tryLock(0, unit));
//   - every wait is measured on std::chrono::steady_clock; a deadline on
//     another clock is converted once, at the call, into a duration;
//   - a failed timed try returns no earlier than asked (the slow path only
//     gives up at or after the deadline; deadlines are rounded up to the
//     clock's resolution, never down).
// Derived must provide `bool try_lock() noexcept` and
// `bool lock_slow_until(std::chrono::steady_clock::time_point) noexcept`,
// the latter reachable from this class (e.g. `friend class TimedTryLock<X>`).
#pragma once

#include <chrono>

namespace locklab {

template <class Derived>
class TimedTryLock {
 public:
  // Tries to take the lock until `timeout` has passed. Zero or negative:
  // exactly one try_lock(). Returns whether the caller holds it.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) noexcept {
    if (timeout <= timeout.zero()) return self().try_lock();
    return try_lock_until(std::chrono::steady_clock::now() +
                          std::chrono::ceil<std::chrono::steady_clock::duration>(timeout));
  }

  // Tries to take the lock until `deadline`. A deadline already past: one
  // try_lock(). Returns false no earlier than the deadline.
  template <class Duration>
  bool try_lock_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& deadline) noexcept {
    if (self().try_lock()) return true;
    const auto d = std::chrono::ceil<std::chrono::steady_clock::duration>(deadline);
    if (std::chrono::steady_clock::now() >= d) return false;
    return self().lock_slow_until(d);
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) noexcept {
    return try_lock_for(deadline - Clock::now());
  }

 protected:
  TimedTryLock() = default;
  ~TimedTryLock() = default;

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace locklab
