// lock_support.hpp — internal helpers shared by the Redis locks (namespace
// detail, not a public type): steady-clock deadlines, the bound on every
// duration option (kMaxDuration), the per-thread record
// of which threads of this process believe they hold a lock, and the
// standard errors for misuse.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <unordered_map>

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

}  // namespace locklab::redis::detail
