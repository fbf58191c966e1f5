// ready_flag.hpp — THE FIX of the exhibit lost_wakeup (instructor folder;
// the exhibit is exercises/bug_museum/lost_wakeup/ready_flag.hpp).
//
// What was wrong: set() changed the flag and notified WITHOUT the mutex, so
// it could run entirely inside the waiter's window between "the flag is
// false" and "sleep on the condition variable": the notification found
// nobody waiting and was lost, and the waiter then slept until its timeout.
// (The wait without a predicate is a second bug: it also returns on a
// spurious wake-up, and it cannot tell "notified" from "flag set".)
//
// The fix, two rules of every condition variable:
// 1. Change the state the waiter checks while holding the mutex the waiter
//    checks it under. The waiter holds the mutex from its check until
//    wait() atomically releases it and sleeps, so set() now cannot fall into
//    the window: it waits for the mutex, which it gets only once the waiter
//    sleeps (and can be woken). Notifying after unlocking is fine.
// 2. Wait with a predicate (`while (!ready) wait`): re-check after every
//    wake-up, and on timeout report the flag, not the wake-up.
// The flag no longer needs to be atomic (the mutex guards it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace locklab::museum::fixed {

class ReadyFlag {
 public:
  explicit ReadyFlag(std::chrono::microseconds window = std::chrono::milliseconds(20)) : window_(window) {}

  void set() {
    {
      std::lock_guard guard(mutex_);
      ready_ = true;
    }
    cv_.notify_one();
  }

  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock guard(mutex_);
    if (ready_) return true;
    std::this_thread::sleep_for(window_);  // the same widened window: now harmless
    return cv_.wait_for(guard, timeout, [this] { return ready_; });
  }

 private:
  std::chrono::microseconds window_;
  bool ready_ = false;  // guarded by mutex_
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace locklab::museum::fixed
