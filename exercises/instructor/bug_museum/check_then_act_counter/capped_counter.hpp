// capped_counter.hpp — THE FIX of the exhibit check_then_act_counter
// (instructor folder; the exhibit is
// exercises/bug_museum/check_then_act_counter/capped_counter.hpp).
//
// What was wrong: atomic steps do not make an atomic operation. Between
// try_increment's check (count < cap) and its act (fetch_add) other threads
// passed the same check on the same old value: 8 threads that all saw 9
// all went in. increment()'s load and store let two threads read 41 and
// both write 42.
//
// The fix: make the decision and the change ONE atomic step.
// - increment(): fetch_add (one `lock xadd`).
// - try_increment(): a compare-exchange loop, AtomicInteger's
//   getAndUpdate: read c; if c >= cap refuse; else CAS c -> c + 1, which
//   succeeds only if nobody changed the count since we read it, and on
//   failure hands us the new value to decide again. The gap is still there
//   (the test widens it as before); it can no longer do harm, because the
//   CAS re-validates what we decided on. (A mutex around check and act is
//   the other correct answer; WaiterGate in primitives/ is the CAS version.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace locklab::museum::fixed {

class CappedCounter {
 public:
  explicit CappedCounter(std::int64_t cap, std::chrono::microseconds window = std::chrono::microseconds(0))
      : cap_(cap), window_(window) {}

  bool try_increment() {
    std::int64_t c = count_.load();
    for (;;) {
      if (c >= cap_) return false;
      widen();  // the same gap: harmless now
      if (count_.compare_exchange_weak(c, c + 1)) return true;
      // c now holds the current count: decide again.
    }
  }

  void increment() { count_.fetch_add(1); }

  std::int64_t get() const { return count_.load(); }
  std::int64_t cap() const { return cap_; }

 private:
  void widen() const {
    if (window_.count() > 0) {
      std::this_thread::sleep_for(window_);
    } else {
      std::this_thread::yield();
    }
  }

  std::atomic<std::int64_t> count_{0};
  std::int64_t cap_;
  std::chrono::microseconds window_;
};

}  // namespace locklab::museum::fixed
