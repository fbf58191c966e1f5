// cas_loop_counter.hpp — Java's AtomicInteger.getAndAdd written out: read the
// value, compute the new one, compare-and-swap, and retry if another thread
// changed it in between.
//
// The retry loop is how every lock-free update that is not a single hardware
// instruction is built (a max, a linked-list push, a state machine), so it is
// worth watching it fail. Each failed compare-exchange means another core
// took the cache line between our load and our CAS: the work was wasted and
// the line must travel again. Under contention the failures per successful
// add grow with the number of running threads, which is why this counter
// falls below FetchAddCounter (whose `lock xadd` cannot fail) as waiters grow.
// failures() exposes that count.
//
// Memory order: relaxed, as argued in fetch_add_counter.hpp. A failed
// compare_exchange_weak reloads the current value into `seen`, so the loop
// needs no separate load. The weak form may also fail spuriously on LL/SC
// machines (ARM, POWER), which would show up as extra failures there; on x86
// `lock cmpxchg` only fails when the value really changed.
//
// Counting the failures must not itself become a contended hot spot, so they
// go into a StripedCounter (the job LongAdder was designed for), and only on
// the failure path.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/striped_counter.hpp"

namespace locklab {

class CasLoopCounter {
 public:
  CasLoopCounter() = default;
  CasLoopCounter(const CasLoopCounter&) = delete;
  CasLoopCounter& operator=(const CasLoopCounter&) = delete;

  // Adds x. Lock-free (some thread's CAS always succeeds) but not wait-free:
  // an unlucky thread can fail any number of times.
  void add(std::int64_t x) noexcept {
    std::int64_t seen = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(seen, seen + x, std::memory_order_relaxed)) {
      failures_.increment();
    }
  }
  void increment() noexcept { add(1); }

  // Same promise as FetchAddCounter::get().
  std::int64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

  // Failed compare-exchange attempts since construction.
  std::int64_t failures() const noexcept { return failures_.sum(); }

 private:
  alignas(kCacheLineSize) std::atomic<std::int64_t> value_{0};
  StripedCounter failures_;  // starts on its own line (StripedCounter is aligned)
};

}  // namespace locklab
