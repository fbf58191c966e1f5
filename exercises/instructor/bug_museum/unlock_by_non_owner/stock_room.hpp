// stock_room.hpp — THE FIX of the exhibit unlock_by_non_owner (instructor
// folder; the exhibit is exercises/bug_museum/unlock_by_non_owner/stock_room.hpp).
//
// What was wrong: try_reserve() called unlock() on both paths, including
// the one where try_lock() had FAILED, i.e. where another thread held the
// lock. An ownerless lock (TAS/TTAS/ticket/MCS, a Semaphore(1), a plain
// futex word) cannot tell who calls unlock(): it freed the holder's lock,
// the next reserve() walked in beside the holder, and both read "10 items"
// and wrote "9" (one reservation lost).
//
// The fix: release only what you acquired. Let RAII decide:
//   std::unique_lock guard(lock_, std::try_to_lock);
//   if (!guard.owns_lock()) return false;
// The guard unlocks only if it owns the lock. The same bug in any codebase
// is the pattern "unlock in a shared exit path"; the same cure applies.
//
// The defence in depth: a lock that knows its owner turns the silent
// corruption into a loud error at the wrong unlock(): ReentrantLock
// (primitives/reentrant_lock.hpp) throws std::system_error
// (operation_not_permitted), changing nothing. The fixed test shows both.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "exercises/bug_museum/unlock_by_non_owner/stock_room.hpp"

namespace locklab::museum::fixed {

template <class Lock = SpinFlagLock>
class StockRoom {
 public:
  StockRoom(int items, std::chrono::milliseconds hold) : items_(items), hold_(hold) {}

  bool reserve() {
    std::lock_guard guard(lock_);
    return take_one();
  }

  bool try_reserve() {
    std::unique_lock guard(lock_, std::try_to_lock);
    if (!guard.owns_lock()) return false;  // busy: we hold nothing, we release nothing
    return take_one();
  }

  int items_left() const { return items_.load(); }
  int inside_now() const { return inside_.load(); }
  int max_inside() const { return max_inside_.load(); }

 private:
  bool take_one() {
    const int now = inside_.fetch_add(1) + 1;
    for (int seen = max_inside_.load(); now > seen && !max_inside_.compare_exchange_weak(seen, now);) {
    }
    const int left = items_.load();
    const bool reserved = left > 0;
    std::this_thread::sleep_for(hold_);
    if (reserved) items_.store(left - 1);
    inside_.fetch_sub(1);
    return reserved;
  }

  Lock lock_;
  std::atomic<int> items_;
  std::chrono::milliseconds hold_;
  std::atomic<int> inside_{0};
  std::atomic<int> max_inside_{0};
};

}  // namespace locklab::museum::fixed
