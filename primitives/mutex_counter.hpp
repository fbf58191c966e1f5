// mutex_counter.hpp — the baseline every lock-free counter is measured
// against: a plain integer guarded by std::mutex.
//
// Uncontended, std::mutex costs two atomic RMWs (lock and unlock) around the
// add. Contended, glibc's mutex puts losers to sleep in the kernel (futex), so
// each hand-off can cost a system call and a context switch, microseconds
// instead of nanoseconds. On a 2-core machine the curve falls hard as soon as
// there are more waiters than cores: that is the lesson this baseline exists
// to show.
#pragma once

#include <cstdint>
#include <mutex>

#include "primitives/cache_line.hpp"

namespace locklab {

class MutexCounter {
 public:
  MutexCounter() = default;
  MutexCounter(const MutexCounter&) = delete;
  MutexCounter& operator=(const MutexCounter&) = delete;

  void add(std::int64_t x) {
    std::lock_guard guard(mutex_);
    value_ += x;
  }
  void increment() { add(1); }

  // Linearizable: the lock orders every read after or before every add.
  std::int64_t get() const {
    std::lock_guard guard(mutex_);
    return value_;
  }

 private:
  alignas(kCacheLineSize) mutable std::mutex mutex_;
  std::int64_t value_ = 0;  // guarded by mutex_
};

}  // namespace locklab
