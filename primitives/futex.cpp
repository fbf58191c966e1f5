#include "primitives/futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace locklab {
namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit integer in memory");

// The kernel reads the word as a plain int; std::atomic<uint32_t> has that
// representation (asserted above), the usual practice for futex wrappers.
std::uint32_t* raw(std::atomic<std::uint32_t>& word) noexcept {
  return reinterpret_cast<std::uint32_t*>(&word);
}

FutexWaitResult classify(long rc) noexcept {
  if (rc == 0) return FutexWaitResult::kWoken;
  switch (errno) {
    case EAGAIN: return FutexWaitResult::kValueChanged;
    case ETIMEDOUT: return FutexWaitResult::kTimedOut;
    case EINTR: return FutexWaitResult::kInterrupted;
    default: return FutexWaitResult::kWoken;  // treat as spurious: callers re-check
  }
}

}  // namespace

FutexWaitResult futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  return classify(syscall(SYS_futex, raw(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0));
}

FutexWaitResult futex_wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                                 std::chrono::steady_clock::time_point deadline) noexcept {
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, which is
  // libstdc++'s steady_clock: no relative-time drift across retries.
  const auto since_epoch = deadline.time_since_epoch();
  if (since_epoch.count() <= 0) return FutexWaitResult::kTimedOut;
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(secs.count());
  ts.tv_nsec = static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs).count());
  return classify(syscall(SYS_futex, raw(word), FUTEX_WAIT_BITSET_PRIVATE, expected, &ts, nullptr,
                          FUTEX_BITSET_MATCH_ANY));
}

int futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept {
  const long rc = syscall(SYS_futex, raw(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
  return rc < 0 ? 0 : static_cast<int>(rc);
}

int futex_wake_all(std::atomic<std::uint32_t>& word) noexcept { return futex_wake(word, INT_MAX); }

}  // namespace locklab
