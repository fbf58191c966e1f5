// fenced_spin_lock.hpp — FencedSpinLock: SpinLock with fencing tokens
// always on, whose acquisition returns the token. The protocol and what
// tokens guarantee: fencing.hpp; the lock itself: spin_lock.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "distributed/client.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::redis {

// SpinLock (spin_lock.hpp) with Options::fenced on: SET NX PX and INCR in
// one acquire script, polling, compare-and-delete release. Kept for code
// that wants the token as the result of the acquisition; it is a thin
// wrapper, and `SpinLock` with `fenced = true` is the same lock. Not
// reentrant. Outcomes as SpinLock: std::system_error for unlock by a
// non-holder and for re-locking, LockLost from unlock after the lease ran
// out, a single try for zero/negative timeouts, redis::Error when Redis fails.
//
// The acquire members come from DeadlineLockable; token(), name() and
// fence_key() are SpinLock's, forwarded (FencingTokenMembers reads a lock's
// own fields, and this one has only the SpinLock it wraps).
class FencedSpinLock : public DeadlineLockable<FencedSpinLock> {
 public:
  struct Options {
    std::chrono::milliseconds lease{100};
    std::chrono::milliseconds retry_interval{50};
    double jitter = 0.0;  // each sleep shortened by a random fraction up to this, in [0, 1]
  };

  // Binds to `name` (string key) and FencingTokens::key_for(name) on
  // `client`. std::invalid_argument for a name check_lock_name refuses
  // (lock_keys.hpp), lease or interval <= 0 or over 100 years, jitter
  // outside [0, 1].
  FencedSpinLock(Client& client, std::string name);
  FencedSpinLock(Client& client, std::string name, Options options);
  FencedSpinLock(const FencedSpinLock&) = delete;
  FencedSpinLock& operator=(const FencedSpinLock&) = delete;

  // The token, or nullopt if `wait` passed (<= 0: one try). The calling
  // thread holds the lock when a token is returned.
  template <class Rep, class Period>
  std::optional<std::int64_t> try_acquire(const std::chrono::duration<Rep, Period>& wait) {
    if (!lock_.try_lock_for(wait)) return std::nullopt;
    return lock_.token();
  }

  // lock(), try_lock(), try_lock_for(), try_lock_until() (DeadlineLockable):
  // Lockable / TimedLockable, for std::lock_guard and the harness; token()
  // then gives the token.
  // Pre: held by this thread. Compare-and-delete; the token's validity at
  // the resource is unaffected (the next holder's token supersedes it).
  void unlock() { lock_.unlock(); }

  // The token of the calling thread's current hold. Throws
  // std::system_error(operation_not_permitted) if it does not hold it.
  std::int64_t token() const { return lock_.token(); }
  bool is_held_by_current_thread() const { return lock_.is_held_by_current_thread(); }
  const std::string& name() const noexcept { return lock_.name(); }
  const std::string& fence_key() const noexcept { return lock_.fence_key(); }
  // Acquire scripts run so far (successful or not).
  std::uint64_t attempts() const noexcept { return lock_.attempts(); }
  // The lock it wraps (its options(), fenced() ...).
  const SpinLock& spin_lock() const noexcept { return lock_; }

 private:
  friend DeadlineLockable<FencedSpinLock>;
  bool acquire_until(detail::Clock::time_point deadline) { return lock_.try_lock_until(deadline); }

  SpinLock lock_;
};

}  // namespace locklab::redis
