// capped_counter.hpp — EXHIBIT check_then_act_counter (bug museum; read
// README.md): a counter with a ceiling (seats sold, concurrent downloads,
// the maxWaiters gate of the ticket-sale semaphore herd), built from
// atomics only. Every single operation on it is atomic. The operations it
// offers are not.
//
// - try_increment(): "if below the cap, add one": check, then act.
// - increment(): "read it, add one, write it back": load, then store.
// Each is two atomic steps with a gap between them in which other threads
// act on a value this thread has already read. The exhibit widens the gap
// to `window` (a yield, or a sleep when given) so that the museum's test
// sees the damage on every run; real code has the same gap, narrower.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace locklab::museum {

class CappedCounter {
 public:
  explicit CappedCounter(std::int64_t cap, std::chrono::microseconds window = std::chrono::microseconds(0))
      : cap_(cap), window_(window) {}

  // Adds one if the count is below the cap. True if it did.
  bool try_increment() {
    if (count_.load() >= cap_) return false;  // check
    widen();
    count_.fetch_add(1);  // act (atomic!)
    return true;
  }

  // Adds one, whatever the cap (an admin override, say).
  void increment() {
    const std::int64_t seen = count_.load();  // read
    widen();
    count_.store(seen + 1);  // write back
  }

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

}  // namespace locklab::museum
