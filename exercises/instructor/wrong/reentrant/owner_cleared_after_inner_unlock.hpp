// WRONG VERSION (grader fixture): the solution clearing owner_ AFTER inner_.unlock(): it can erase the next
// owner; MyReentrantLockTest.TheNextOwnerStaysTheOwner* fails.
// my_reentrant_lock.hpp — REFERENCE SOLUTION of the exercise reentrant
// (instructor folder). The contract is in the student's starter,
// exercises/reentrant/my_reentrant_lock.hpp; primitives/reentrant_lock.hpp
// is the lab's full ReentrantLock (fairness, conditions) built the same way
// on a Semaphore(1).
//
// Memory orders and why the fields may be what they are
// -----------------------------------------------------
// - The inner lock's own lock/unlock provide all happens-before between
//   critical sections (including holds_ and owner_ as seen by the next
//   owner).
// - owner_ is only ever asked "is it me?", and relaxed loads answer that
//   exactly: the only thread that stores MY id there is me, and a thread
//   always reads its own latest store or something later in the word's
//   modification order. So I read my id if and only if I stored it and have
//   not cleared it since. (It must still be atomic: other threads read it
//   while the owner writes it, and a plain field would be a data race.)
// - holds_ is plain: only the owner reads or writes it, and ownership
//   passes through the inner lock, which orders one owner's accesses before
//   the next owner's.
// - unlock clears owner_ BEFORE releasing the inner lock: once the inner lock
//   is free another thread may become owner and store its id; a late store of
//   "nobody" from us would then erase the new owner.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>

namespace locklab::exercises {

template <class L>
concept TimedInnerLock = requires(L& l, std::chrono::milliseconds d, std::chrono::steady_clock::time_point t) {
  { l.try_lock_for(d) } -> std::convertible_to<bool>;
  { l.try_lock_until(t) } -> std::convertible_to<bool>;
};

template <class Inner>
class MyReentrantLock {
 public:
  MyReentrantLock() = default;
  MyReentrantLock(const MyReentrantLock&) = delete;
  MyReentrantLock& operator=(const MyReentrantLock&) = delete;

  void lock() {
    if (reenter()) return;
    inner_.lock();
    become_owner();
  }

  bool try_lock() {
    if (reenter()) return true;
    if (!inner_.try_lock()) return false;
    become_owner();
    return true;
  }

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout)
    requires TimedInnerLock<Inner>
  {
    if (reenter()) return true;
    if (!inner_.try_lock_for(timeout)) return false;
    become_owner();
    return true;
  }

  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline)
    requires TimedInnerLock<Inner>
  {
    if (reenter()) return true;
    if (!inner_.try_lock_until(deadline)) return false;
    become_owner();
    return true;
  }

  void unlock() {
    if (!is_held_by_current_thread()) {
      throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                              "MyReentrantLock::unlock by a thread that does not hold the lock");
    }
    if (--holds_ != 0) return;
    inner_.unlock();
    owner_.store(std::thread::id(), std::memory_order_relaxed);  // WRONG (the fixture's bug): after the inner unlock
  }

  std::int64_t hold_count() const noexcept { return is_held_by_current_thread() ? holds_ : 0; }

  bool is_held_by_current_thread() const noexcept {
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

  const Inner& inner() const noexcept { return inner_; }

 private:
  bool reenter() noexcept {
    if (!is_held_by_current_thread()) return false;
    ++holds_;
    return true;
  }
  void become_owner() noexcept {
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    holds_ = 1;
  }

  Inner inner_;
  std::atomic<std::thread::id> owner_{};
  std::int64_t holds_ = 0;
};

}  // namespace locklab::exercises
