// Semaphore's argument checks and errors. The waiting algorithm is
// QueuedSynchronizer's (primitives/queued_synchronizer.cpp).
#include "primitives/semaphore.hpp"

#include <stdexcept>
#include <string>

namespace locklab {

namespace {
// Checked before the synchronizer is built, so a bad count never makes one.
std::int64_t checked_initial(std::ptrdiff_t initial_permits) {
  if (initial_permits < 0 || initial_permits > Semaphore::kMaxPermits) {
    throw std::invalid_argument("Semaphore: initial permits " + std::to_string(initial_permits) +
                                " outside [0, kMaxPermits]");
  }
  return initial_permits;
}
}  // namespace

Semaphore::Semaphore(std::ptrdiff_t initial_permits, Fairness fairness, SpinPolicy policy)
    : sync_(checked_initial(initial_permits), fairness, policy) {}

void Semaphore::throw_bad_count(std::ptrdiff_t n, const char* who) {
  throw std::invalid_argument(std::string(who) + ": permit count " + std::to_string(n) +
                              " outside [1, kMaxPermits]");
}

void Semaphore::throw_overflow(std::ptrdiff_t n) const {
  throw std::invalid_argument("Semaphore::release: " + std::to_string(n) + " more permits would exceed kMaxPermits");
}

}  // namespace locklab
