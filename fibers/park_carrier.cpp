#include "fibers/park_carrier.hpp"

namespace locklab::fibers {

bool ParkCarrier::wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                             std::chrono::steady_clock::time_point deadline, const void* lock,
                             const char* name) noexcept {
  // Read before sleeping, used right after waking on the same OS thread: the
  // fiber cannot migrate while its carrier is blocked in the kernel.
  VirtualThread* self = VirtualThread::current();
  const auto start = self != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const FutexWaitResult r = deadline == std::chrono::steady_clock::time_point::max()
                                ? futex_wait(word, expected)
                                : futex_wait_until(word, expected, deadline);
  if (self != nullptr && r != FutexWaitResult::kValueChanged) {
    self->report(PinningEvent::Kind::kWaitingForLock, lock, name, std::chrono::steady_clock::now() - start);
  }
  return r != FutexWaitResult::kTimedOut;
}

}  // namespace locklab::fibers
