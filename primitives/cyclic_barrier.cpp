// CyclicBarrier's await, trip and break (the design is in cyclic_barrier.hpp).
#include "primitives/cyclic_barrier.hpp"

#include <mutex>
#include <string>
#include <utility>

namespace locklab {

using Clock = std::chrono::steady_clock;

CyclicBarrier::CyclicBarrier(int parties, std::function<void()> action)
    : parties_(parties), action_(std::move(action)) {
  if (parties < 1) {
    throw std::invalid_argument("CyclicBarrier: parties must be at least 1, got " + std::to_string(parties));
  }
}

void CyclicBarrier::end_generation_locked(Arrival::Outcome how) {
  for (Arrival* a = arrivals_; a != nullptr;) {
    Arrival* next = a->next;  // read before the owner may leave with its node
    a->outcome = how;
    a = next;
  }
  arrivals_ = nullptr;
  waiting_ = 0;
  broken_ = how == Arrival::Outcome::kBroken;
  tripped_.signal_all();
}

int CyclicBarrier::await_steady(Clock::time_point deadline) {
  std::unique_lock guard(lock_);
  if (broken_) throw BrokenBarrier("CyclicBarrier: broken (a party timed out, reset() was called or the action threw)");
  const int index = parties_ - 1 - waiting_;
  if (index == 0) {
    if (action_) {
      try {
        action_();
      } catch (...) {
        end_generation_locked(Arrival::Outcome::kBroken);
        throw;
      }
    }
    end_generation_locked(Arrival::Outcome::kTripped);
    return 0;
  }
  const bool timed = deadline != Clock::time_point::max();
  if (timed && Clock::now() >= deadline) {
    end_generation_locked(Arrival::Outcome::kBroken);
    throw BarrierTimeout("CyclicBarrier: timed out before every party arrived; the barrier is now broken");
  }
  Arrival me;
  me.next = arrivals_;
  arrivals_ = &me;
  ++waiting_;
  while (me.outcome == Arrival::Outcome::kWaiting) {
    if (!timed) {
      tripped_.await();
    } else if (!tripped_.await_until(deadline) && me.outcome == Arrival::Outcome::kWaiting) {
      // Still waiting at the deadline (under the lock: nobody can end the
      // generation meanwhile): break it for everyone, ourselves included.
      end_generation_locked(Arrival::Outcome::kBroken);
      throw BarrierTimeout("CyclicBarrier: timed out before every party arrived; the barrier is now broken");
    }
  }
  if (me.outcome == Arrival::Outcome::kBroken) {
    throw BrokenBarrier("CyclicBarrier: broken while waiting (a party timed out, reset() was called or the action threw)");
  }
  return index;
}

void CyclicBarrier::reset() {
  std::lock_guard guard(lock_);
  end_generation_locked(Arrival::Outcome::kBroken);
  broken_ = false;
}

bool CyclicBarrier::is_broken() const {
  std::lock_guard guard(lock_);
  return broken_;
}

int CyclicBarrier::number_waiting() const {
  std::lock_guard guard(lock_);
  return waiting_;
}

}  // namespace locklab
