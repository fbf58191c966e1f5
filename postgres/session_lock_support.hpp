// session_lock_support.hpp — small helpers AdvisoryLock and RowLock share:
// the misuse errors (the same std::system_error codes as the Redis locks)
// and a deadline as PostgreSQL's lock_timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>

#include "postgres/error.hpp"

namespace locklab::pg::detail {

using Clock = std::chrono::steady_clock;

[[noreturn]] inline void throw_not_held(const std::string& name) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          "unlock of '" + name + "' by a thread that does not hold it");
}

[[noreturn]] inline void throw_relock(const std::string& name) {
  throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                          "lock of '" + name + "' by the thread that holds it (not reentrant)");
}

// Whether `e` means the session is over: the connection broke (kIo), or
// the server said so as it closed it (SQLSTATE class 08, connection
// exception; 57P01-57P03, the backend terminated or the server shutting
// down). The server released everything the session held either way.
inline bool session_ended(const Error& e) noexcept {
  const std::string& state = e.sqlstate();
  return e.kind() == Error::Kind::kIo || state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0;
}

// lock_timeout for a wait until `deadline` that has not passed yet: whole
// ms rounded up, at least 1 (0 would mean "no limit" to PostgreSQL); 0 for
// time_point::max(). Capped at INT_MAX ms (lock_timeout's range, 24.8
// days): a longer wait is "no limit" too, as it is for the Redis locks.
inline std::int64_t lock_timeout_ms(Clock::time_point deadline, Clock::time_point now) {
  constexpr std::int64_t kMax = 2'147'483'647;
  if (deadline == Clock::time_point::max()) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  if (left > kMax) return 0;
  return left < 1 ? 1 : left;
}

}  // namespace locklab::pg::detail
