// lock_support.hpp — internal helpers shared by the Redis locks (namespace
// detail, not a public type): steady-clock deadlines, the bound on every
// duration option (kMaxDuration), the per-thread record of which threads of
// this process believe they hold a lock, the record of owners whose last
// command's outcome is unknown (InDoubt), and the
// standard errors for misuse.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/error.hpp"

namespace locklab::redis::detail {

using Clock = std::chrono::steady_clock;

// now + d, saturating at time_point::max() ("no deadline"); d <= 0 gives
// now (a single try).
template <class Rep, class Period>
Clock::time_point deadline_after(const std::chrono::duration<Rep, Period>& d) {
  const auto now = Clock::now();
  if (d <= d.zero()) return now;
  if (std::chrono::duration<double>(d) >= std::chrono::duration<double>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + std::chrono::ceil<Clock::duration>(d);
}

template <class C, class D>
Clock::time_point to_steady(const std::chrono::time_point<C, D>& t) {
  if constexpr (std::is_same_v<C, Clock>) {
    return std::chrono::ceil<Clock::duration>(t);
  } else {
    return deadline_after(t - C::now());
  }
}

inline std::int64_t millis(std::chrono::milliseconds d) { return static_cast<std::int64_t>(d.count()); }

// The longest lease, interval or spin budget any Redis lock accepts: 100
// years. Why a bound at all: Redis refuses a PX / PEXPIRE whose expiry
// passes its clock's range (ms since 1970 in a signed 64-bit number), and a
// script that has written before it is refused leaves its key behind; the
// waiters compute `now + lease` on the steady clock, whose nanoseconds reach
// only about 292 years; and Lua numbers are exact only up to 2^53. 100 years
// is inside all three with room to spare, and longer than any real lease.
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::years(100);

// Throws std::invalid_argument "<what> of N ms exceeds the maximum ..." if d
// exceeds kMaxDuration. The lower bounds (positive, >= 3 ms ...) differ per
// option and are checked by each lock.
template <class Rep, class Period>
void check_at_most_max(const std::string& what, const std::chrono::duration<Rep, Period>& d) {
  if (std::chrono::duration<double>(d) > std::chrono::duration<double>(kMaxDuration)) {
    char given[64];
    std::snprintf(given, sizeof given, "%.0f", std::chrono::duration<double, std::milli>(d).count());
    throw std::invalid_argument(what + " of " + given + " ms exceeds the maximum of " +
                                std::to_string(kMaxDuration.count()) + " ms (100 years)");
  }
}

// When to look again at a lock whose holder's lease has `pttl_ms` left:
// just after it runs out (now + pttl + 1 ms), saturating at
// time_point::max() for a PTTL the steady clock cannot hold (another client
// may have set any lease Redis accepts; the plain sum would overflow into
// the past and send the waiter round a busy loop).
inline Clock::time_point after_pttl(Clock::time_point now, std::int64_t pttl_ms) {
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  if (pttl_ms >= room.count() - 1) return Clock::time_point::max();
  return now + std::chrono::milliseconds(pttl_ms + 1);
}

[[noreturn]] inline void throw_not_owner(const std::string& name) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          "unlock of Redis lock '" + name + "' by a thread that does not hold it");
}

[[noreturn]] inline void throw_would_deadlock(const std::string& name) {
  throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                          "Redis lock '" + name + "' is not reentrant and this thread already holds it");
}

// Which owners (Client::thread_owner() strings) of this process hold a lock
// object, with a hold count. The server is the authority; this record only
// lets unlock() by a non-holder fail without a round trip and tells a lost
// lease (server says no, we said yes) from misuse (we said no).
class LocalHolds {
 public:
  std::int64_t count(const std::string& owner) const {
    std::lock_guard g(mu_);
    auto it = holds_.find(owner);
    return it == holds_.end() ? 0 : it->second;
  }
  void set(const std::string& owner, std::int64_t n) {
    std::lock_guard g(mu_);
    if (n <= 0) {
      holds_.erase(owner);
    } else {
      holds_[owner] = n;
    }
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::int64_t> holds_;
};

// The first step of a non-reentrant lock's unlock(): the calling thread's
// owner string, once the record says it holds the lock (throw_not_owner,
// nothing sent, if not), with its hold and token cleared: whatever the
// server answers next, this thread no longer holds it.
inline std::string end_hold(Client& client, LocalHolds& holds, LocalHolds& tokens, const std::string& name) {
  std::string owner = client.thread_owner();
  if (holds.count(owner) == 0) throw_not_owner(name);
  holds.set(owner, 0);
  tokens.set(owner, 0);
  return owner;
}

// True for the failures after which nobody knows what the server did: the
// command may have run with its reply lost (kTimeout, kIo), or may never
// have been sent (kConnect). A kServer or kProtocol reply completed the
// exchange: the server's state is known from it.
inline bool outcome_unknown(const Error& e) noexcept {
  return e.kind() == Error::Kind::kTimeout || e.kind() == Error::Kind::kIo || e.kind() == Error::Kind::kConnect;
}

// Runs `script` as EVAL with its source: one round trip that needs no
// SCRIPT LOAD first. For the restores after an unknown outcome: they are
// rare, and a server slow enough to lose a reply could lose a load too.
inline Reply eval_source(Client& client, const Script& script, const std::vector<std::string>& keys,
                         const std::vector<std::string>& args) {
  std::vector<std::string> argv{"EVAL", script.source(), std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return client.command(argv);
}

// Owners whose acquire or release failed with an unknown outcome, so that
// the server may hold more for them than the lock's record says (a lost
// acquire reply: the server granted a hold nobody knows of; a lost release:
// the key is still there). Each lock supplies `restore`, one owner-checked
// script that brings the server back to the record (release this owner's
// extra hold, publishing or handing on as a release would) and is harmless
// when there is nothing to restore.
//   guard(owner, command, restore)  runs one acquire or release command; if
//       it fails, calls after_failure; then rethrows the command's error.
//   after_failure(owner, error, restore)  kTimeout / kIo: runs restore at
//       once, and remembers the owner if that fails too (the server is
//       still slow or away). kConnect: the command never reached the server
//       and a restore now would most likely wait out a connect timeout in
//       vain: only remembers the owner. Other kinds: nothing.
//   settle(owner, restore)          before an owner's next acquire or
//       release: restores first if the owner is remembered (throws the
//       restore's redis::Error and stays remembered if it fails again).
// The immediate restore is one more command: the caller gets the error at
// most one command_timeout later. Cost on the normal path: one relaxed
// atomic load (no owner in doubt).
class InDoubt {
 public:
  template <class Command, class Restore>
  auto guard(const std::string& owner, Command&& command, Restore&& restore) -> decltype(command()) {
    try {
      return command();
    } catch (const Error& e) {
      after_failure(owner, e, restore);
      throw;
    }
  }

  template <class Restore>
  void settle(const std::string& owner, Restore&& restore) {
    if (count_.load(std::memory_order_relaxed) == 0 || !contains(owner)) return;
    restore();
    forget(owner);
  }

  template <class Restore>
  void after_failure(const std::string& owner, const Error& e, Restore&& restore) noexcept {
    if (e.kind() == Error::Kind::kConnect) {
      remember(owner);
      return;
    }
    if (!outcome_unknown(e)) return;
    try {
      restore();
      forget(owner);
    } catch (...) {
      remember(owner);
    }
  }

  // settle() for every remembered owner, oldest first, for objects whose
  // owners are single-use (PermitSemaphore's permit ids: nobody comes back
  // with the same one). Throws the first failing restore's error; that
  // owner and the ones after it stay remembered.
  template <class Restore>
  void settle_all(Restore&& restore) {
    if (count_.load(std::memory_order_relaxed) == 0) return;
    std::vector<std::string> owners;
    {
      std::lock_guard g(mu_);
      owners.assign(owners_.begin(), owners_.end());
    }
    for (const std::string& owner : owners) {
      restore(owner);
      forget(owner);
    }
  }

  bool contains(const std::string& owner) const {
    std::lock_guard g(mu_);
    return owners_.count(owner) > 0;
  }

 private:
  void remember(const std::string& owner) noexcept {
    try {
      std::lock_guard g(mu_);
      if (owners_.insert(owner).second) count_.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      // Out of memory: the extra hold, if any, expires with its lease.
    }
  }
  void forget(const std::string& owner) {
    std::lock_guard g(mu_);
    if (owners_.erase(owner) > 0) count_.fetch_sub(1, std::memory_order_relaxed);
  }

  mutable std::mutex mu_;
  std::unordered_set<std::string> owners_;
  std::atomic<std::size_t> count_{0};  // owners_.size(), readable without the mutex
};

}  // namespace locklab::redis::detail
