// lock_support.hpp — internal helpers shared by the Redis locks (namespace
// detail, not a public type): steady-clock deadlines, the per-thread record
// of which threads of this process believe they hold a lock, and the
// standard errors for misuse.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
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
