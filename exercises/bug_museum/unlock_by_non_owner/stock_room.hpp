// stock_room.hpp — EXHIBIT unlock_by_non_owner (bug museum; read README.md):
// a stock of items behind a lock, with a blocking reserve() and a polite
// try_reserve() that gives up at once when the room is busy. One of its
// paths releases a lock it never took; after that, two threads are inside
// the critical section at once, and nothing complains.
//
// The lock is a plain spin flag: like TasLock, TtasLock, TicketLock or a
// Semaphore(1), it does not record who holds it, so unlock() by anyone
// simply frees it. (Which lock of primitives/ would have refused?)
//
// The window: reserve() holds the lock for `hold` (a sleep standing for a
// slow critical section: a database call, a page fault, a preemption), so
// that the museum's test sees the overlap on every run. The room counts the
// threads inside its critical section (an atomic, so counting is not itself
// a data race) and keeps the most it ever saw: 1 is correct.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace locklab::museum {

// An ownerless spin lock (what TtasLock is in a release build).
class SpinFlagLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

template <class Lock = SpinFlagLock>
class StockRoom {
 public:
  StockRoom(int items, std::chrono::milliseconds hold) : items_(items), hold_(hold) {}

  // Waits for the room, takes one item if there is one. True if it did.
  bool reserve() {
    lock_.lock();
    const bool reserved = take_one();
    lock_.unlock();
    return reserved;
  }

  // Takes one item if the room is free right now; false if busy or empty
  // (the caller will come back later).
  bool try_reserve() {
    bool reserved = false;
    if (lock_.try_lock()) {
      reserved = take_one();
    }
    lock_.unlock();
    return reserved;
  }

  int items_left() const { return items_.load(); }
  int inside_now() const { return inside_.load(); }
  // The most threads ever seen inside the critical section at once.
  int max_inside() const { return max_inside_.load(); }

 private:
  // The critical section: count ourselves in, take an item, take our time.
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

}  // namespace locklab::museum
