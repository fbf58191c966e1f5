// Slow paths of ReentrantLock: the ownership error and Condition's waits.
// The design and its memory-order argument are in reentrant_lock.hpp.
#include "primitives/reentrant_lock.hpp"

#include <cassert>
#include <string>
#include <system_error>

namespace locklab {

using Clock = std::chrono::steady_clock;

void ReentrantLock::throw_not_owner(const char* what) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          std::string("ReentrantLock: ") + what + " by a thread that does not hold the lock");
}

ReentrantLock::Condition::~Condition() {
  assert(queue_.empty() && "ReentrantLock::Condition destroyed while threads await on it");
}

void ReentrantLock::Condition::check_held(const char* what) const {
  if (!lock_.is_held_by_current_thread()) ReentrantLock::throw_not_owner(what);
}

bool ReentrantLock::Condition::expired_now() const {
  check_held("Condition::await_for");
  return false;
}

bool ReentrantLock::Condition::await_until_steady(Clock::time_point deadline) {
  check_held("Condition::await");
  const std::thread::id self = std::this_thread::get_id();
  std::int64_t holds = 0;
  return queue_.await_until(
      deadline,
      [&] {  // release the lock completely, remembering the hold count
        holds = lock_.extra_holds();
        lock_.extra_holds() = 0;
        lock_.owner().store(std::thread::id(), std::memory_order_relaxed);
        lock_.sync_.release(1);
      },
      [&] {  // take it back with the same hold count
        lock_.sync_.acquire(1);
        lock_.become_owner(self);
        lock_.extra_holds() = holds;
      });
}

void ReentrantLock::Condition::signal() {
  check_held("Condition::signal");
  queue_.signal();
}

void ReentrantLock::Condition::signal_all() {
  check_held("Condition::signal_all");
  queue_.signal_all();
}

bool ReentrantLock::Condition::has_waiters() const {
  check_held("Condition::has_waiters");
  return !queue_.empty();
}

std::int64_t ReentrantLock::Condition::wait_queue_length() const {
  check_held("Condition::wait_queue_length");
  return queue_.length();
}

}  // namespace locklab
