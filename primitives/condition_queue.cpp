// Slow paths of ConditionQueue: the list, the futex wait and the wake. The
// contract and the ordering argument are in condition_queue.hpp.
#include "primitives/condition_queue.hpp"

#include "primitives/futex.hpp"

namespace locklab {

void ConditionQueue::push(Waiter& w) noexcept {
  w.prev = tail_;
  (tail_ != nullptr ? tail_->next : head_) = &w;
  tail_ = &w;
  ++length_;
}

ConditionQueue::Waiter* ConditionQueue::pop() noexcept {
  Waiter* w = head_;
  if (w == nullptr) return nullptr;
  head_ = w->next;
  (head_ != nullptr ? head_->prev : tail_) = nullptr;
  w->next = w->prev = nullptr;
  w->queued = false;
  --length_;
  return w;
}

void ConditionQueue::wait_for_signal(Waiter& w, Clock::time_point deadline) noexcept {
  // A signal sets the word before it wakes us, so sleeping only while it is
  // 0 loses no wake-up.
  const bool timed = deadline != Clock::time_point::max();
  while (w.word.load(std::memory_order_acquire) == 0) {
    if (timed) {
      if (Clock::now() >= deadline) break;
      futex_wait_until(w.word, 0, deadline);
    } else {
      futex_wait(w.word, 0);
    }
  }
}

bool ConditionQueue::settle(Waiter& w) noexcept {
  if (!w.queued) return true;  // signalled (possibly right at the deadline)
  (w.prev != nullptr ? w.prev->next : head_) = w.next;
  (w.next != nullptr ? w.next->prev : tail_) = w.prev;
  --length_;
  return false;
}

void ConditionQueue::wake(Waiter& w) noexcept {
  // We hold the lock, and the awaiter returns only after re-acquiring it, so
  // the node stays alive through both calls.
  w.word.store(1, std::memory_order_release);
  futex_wake_one(w.word);
}

void ConditionQueue::signal() noexcept {
  if (Waiter* w = pop()) wake(*w);
}

void ConditionQueue::signal_all() noexcept {
  while (Waiter* w = pop()) wake(*w);
}

}  // namespace locklab
