// ready_flag.hpp — EXHIBIT lost_wakeup (bug museum; read README.md): a
// one-shot "it is ready" signal between threads, built on a mutex, a
// condition variable and an atomic flag. It looks careful. It loses wake-ups.
//
// The contract it claims
// ----------------------
// - set(): marks the flag ready and wakes a waiter. Called once.
// - wait_for(timeout): returns true as soon as the flag is ready (at once if
//   it already is), false only if `timeout` passes without set() having been
//   called.
//
// The window
// ----------
// Every implementation of "check, then sleep" has an instant between the
// check and the sleep. In real code it is a few nanoseconds wide and the
// bug shows once a week in production. This exhibit widens it to
// `window` (a sleep, default 20 ms) so that the museum's test sees the bug
// on every run. A correct design is correct whatever the window's width.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace locklab::museum {

class ReadyFlag {
 public:
  explicit ReadyFlag(std::chrono::microseconds window = std::chrono::milliseconds(20)) : window_(window) {}

  // Marks the flag ready and wakes a waiter.
  void set() {
    ready_.store(true, std::memory_order_release);
    cv_.notify_one();
  }

  // True once set() has been called; false if `timeout` passed first.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock guard(mutex_);
    if (ready_.load(std::memory_order_acquire)) return true;
    std::this_thread::sleep_for(window_);  // the window between check and sleep, widened
    return cv_.wait_for(guard, timeout) == std::cv_status::no_timeout;
  }

 private:
  std::chrono::microseconds window_;
  std::atomic<bool> ready_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace locklab::museum
