// Slow paths of ReentrantLock: the ownership error and Condition's waits.
// The design and its memory-order argument are in reentrant_lock.hpp.
#include "primitives/reentrant_lock.hpp"

#include <cassert>
#include <string>
#include <system_error>

#include "primitives/futex.hpp"

namespace locklab {

using Clock = std::chrono::steady_clock;

void ReentrantLock::throw_not_owner(const char* what) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          std::string("ReentrantLock: ") + what + " by a thread that does not hold the lock");
}

// An awaiting thread. Lives on its stack for the whole await; every field is
// guarded by the lock except `word`, which the awaiter reads while it does
// not hold the lock.
struct ReentrantLock::Condition::Waiter {
  std::atomic<std::uint32_t> word{0};  // 0 = waiting, 1 = signalled
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  bool queued = true;  // still on the condition's list
};

ReentrantLock::Condition::~Condition() {
  assert(head_ == nullptr && "ReentrantLock::Condition destroyed while threads await on it");
}

void ReentrantLock::Condition::check_held(const char* what) const {
  if (!lock_.is_held_by_current_thread()) ReentrantLock::throw_not_owner(what);
}

bool ReentrantLock::Condition::expired_now() const {
  check_held("Condition::await_for");
  return false;
}

ReentrantLock::Condition::Waiter* ReentrantLock::Condition::pop_locked() noexcept {
  Waiter* w = head_;
  if (w == nullptr) return nullptr;
  head_ = w->next;
  (head_ != nullptr ? head_->prev : tail_) = nullptr;
  w->next = w->prev = nullptr;
  w->queued = false;
  --length_;
  return w;
}

bool ReentrantLock::Condition::await_until_steady(Clock::time_point deadline) {
  check_held("Condition::await");
  const bool timed = deadline != Clock::time_point::max();
  if (timed && Clock::now() >= deadline) return false;  // a past deadline: do not wait

  // Join the condition's queue while still holding the lock.
  Waiter me;
  me.prev = tail_;
  (tail_ != nullptr ? tail_->next : head_) = &me;
  tail_ = &me;
  ++length_;

  // Release the lock completely, remembering the hold count.
  const std::thread::id self = std::this_thread::get_id();
  const std::int64_t holds = lock_.holds();
  lock_.holds() = 0;
  lock_.owner().store(std::thread::id(), std::memory_order_relaxed);
  lock_.sync_.release(1);

  // Wait for a signal (or the deadline). A signal sets the word before it
  // wakes us, so sleeping only while it is 0 loses no wake-up.
  while (me.word.load(std::memory_order_acquire) == 0) {
    if (timed) {
      if (Clock::now() >= deadline) break;
      futex_wait_until(me.word, 0, deadline);
    } else {
      futex_wait(me.word, 0);
    }
  }

  // Take the lock back with the same hold count, then decide: under the
  // lock nobody can signal us concurrently.
  lock_.sync_.acquire(1);
  lock_.become_owner(self);
  lock_.holds() = holds;
  if (!me.queued) return true;  // signalled (possibly right at the deadline)
  (me.prev != nullptr ? me.prev->next : head_) = me.next;
  (me.next != nullptr ? me.next->prev : tail_) = me.prev;
  --length_;
  return false;
}

void ReentrantLock::Condition::signal() {
  check_held("Condition::signal");
  Waiter* w = pop_locked();
  if (w == nullptr) return;
  // We hold the lock, and the awaiter returns only after re-acquiring it, so
  // the node stays alive through both calls.
  w->word.store(1, std::memory_order_release);
  futex_wake_one(w->word);
}

void ReentrantLock::Condition::signal_all() {
  check_held("Condition::signal_all");
  while (Waiter* w = pop_locked()) {
    w->word.store(1, std::memory_order_release);
    futex_wake_one(w->word);
  }
}

bool ReentrantLock::Condition::has_waiters() const {
  check_held("Condition::has_waiters");
  return head_ != nullptr;
}

std::int64_t ReentrantLock::Condition::wait_queue_length() const {
  check_held("Condition::wait_queue_length");
  return length_;
}

}  // namespace locklab
