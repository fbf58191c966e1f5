#include "fibers/park_fiber.hpp"

#include <mutex>

namespace locklab::fibers {

bool ParkFiber::wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                           std::chrono::steady_clock::time_point deadline, const void*, const char*) {
  std::unique_lock<boost::fibers::mutex> lock(mutex_);
  if (word.load(std::memory_order_seq_cst) != expected) return true;
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    queue_.wait(lock);
    return true;
  }
  return queue_.wait_until(lock, deadline) == boost::fibers::cv_status::no_timeout;
}

// Passing through the mutex is the point: a waiter between its check and its
// sleep holds it, so we cannot notify before it is queued. Notifying after
// unlocking spares the woken fiber a collision with us on the mutex.
void ParkFiber::wake_one(std::atomic<std::uint32_t>&) {
  { std::lock_guard<boost::fibers::mutex> lock(mutex_); }
  queue_.notify_one();
}

void ParkFiber::wake_all(std::atomic<std::uint32_t>&) {
  { std::lock_guard<boost::fibers::mutex> lock(mutex_); }
  queue_.notify_all();
}

}  // namespace locklab::fibers
