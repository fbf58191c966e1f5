// my_reentrant_lock.hpp — YOUR lock for the exercise reentrant (read
// README.md first): a wrapper that turns ANY Lockable (std::mutex, TtasLock,
// your own ticket lock) into java.util.concurrent's ReentrantLock semantics:
// the lock knows its owner, the owner may take it again, and only the owner
// may release it.
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the methods marked TODO. Run the checks with
//   exercises/check.sh reentrant
//
// The contract
// ------------
//   state, seen by thread T      T: lock()                 T: unlock()
//   free                         owner = T, holds = 1      throws (not owner)
//   held by T, holds = k         holds = k + 1             holds = k - 1; at 0: free
//   held by U != T               waits for the inner lock  throws (not owner)
// - The inner lock is taken once per ownership, not once per lock(): a
//   reentrant lock()/try_lock() by the owner only counts (the checks use an
//   inner lock that reports a second lock() by its holder).
// - unlock() by a thread that does not hold the lock throws
//       std::system_error(std::make_error_code(std::errc::operation_not_permitted), "...")
//   and changes nothing (Java's IllegalMonitorStateException).
// - try_lock(): the owner re-enters (true); otherwise one inner try_lock().
// - try_lock_for / try_lock_until exist only when the inner lock has them
//   (the `requires` clauses below); same rules as try_lock, with the inner
//   lock's timed try.
// - hold_count(): the calling thread's holds (0 if it is not the owner);
//   is_held_by_current_thread().
// - The usual mutual exclusion and happens-before (the inner lock gives you
//   those) and the conformance suite's other checks.
//
// The algorithm to write
// ----------------------
//   owner_  std::atomic<std::thread::id>: who holds it (std::thread::id() = nobody)
//   holds_  a plain integer: the hold count
// lock(): if owner_ is me, ++holds_; else take the inner lock, then record
// myself as owner with holds_ = 1. unlock(): if owner_ is not me, throw;
// --holds_; at 0 clear owner_ BEFORE releasing the inner lock (why before?).
// Questions to answer in your comments: why may holds_ be a plain integer
// although several threads use this object? Why is a relaxed load of owner_
// enough to answer "is it me?" (hint: which thread ever stores MY id there?)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>

namespace locklab::exercises {

// A Lockable with timed tries (std::timed_mutex, ReentrantLock, ...).
template <class L>
concept TimedInnerLock = requires(L& l, std::chrono::milliseconds d, std::chrono::steady_clock::time_point t) {
  { l.try_lock_for(d) } -> std::convertible_to<bool>;
  { l.try_lock_until(t) } -> std::convertible_to<bool>;
};

template <class Inner>
class MyReentrantLock {
 public:
  MyReentrantLock() = default;
  MyReentrantLock(const MyReentrantLock&) = delete;
  MyReentrantLock& operator=(const MyReentrantLock&) = delete;

  // Acquires (waiting as long as it takes), or re-enters if already the owner.
  void lock() {
    // TODO(you)
  }

  // Re-enters if the owner; else one inner try. Never waits for another owner.
  bool try_lock() {
    // TODO(you)
    return true;  // the starter always says yes (false would make std::lock spin forever)
  }

  // Like try_lock, waiting up to `timeout` for the inner lock.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout)
    requires TimedInnerLock<Inner>
  {
    // TODO(you)
    (void)timeout;
    return true;  // the starter always says yes
  }

  // Like try_lock, waiting until `deadline` for the inner lock.
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline)
    requires TimedInnerLock<Inner>
  {
    // TODO(you)
    (void)deadline;
    return true;  // the starter always says yes
  }

  // One hold less; at zero the lock is free. Throws std::system_error
  // (operation_not_permitted), changing nothing, if the caller is not the owner.
  void unlock() {
    // TODO(you)
  }

  // The calling thread's hold count: 0 if it does not hold the lock.
  std::int64_t hold_count() const noexcept {
    // TODO(you)
    return 0;
  }

  bool is_held_by_current_thread() const noexcept {
    // TODO(you)
    return false;
  }

  // The wrapped lock (for tests and statistics).
  const Inner& inner() const noexcept { return inner_; }

 private:
  Inner inner_;
  std::atomic<std::thread::id> owner_{};
  std::int64_t holds_ = 0;
};

}  // namespace locklab::exercises
