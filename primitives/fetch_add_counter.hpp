// fetch_add_counter.hpp — a counter that is one hardware atomic add.
//
// On x86-64 `fetch_add` compiles to `lock xadd`: the core takes the cache line
// in exclusive state, adds, and releases it, and the instruction cannot fail.
// That is the best a *single* memory location can do, and also its limit:
// every increment from every core must own the same cache line in turn, so
// under contention throughput is bounded by how fast the line can travel
// between cores (tens of nanoseconds per hand-off), no matter how many cores
// you add. StripedCounter removes that bound by not sharing the line.
//
// Memory order: relaxed everywhere. The counter publishes no other data, so
// nothing needs to be ordered around it. Exactness does not depend on the
// order either: all read-modify-writes of one atomic object form a single
// total "modification order" ([intro.races]), so no increment is ever lost.
// (On x86 relaxed and seq_cst RMWs are the same instruction anyway; on ARM
// relaxed saves the barriers.)
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"

namespace locklab {

class FetchAddCounter {
 public:
  FetchAddCounter() = default;
  FetchAddCounter(const FetchAddCounter&) = delete;
  FetchAddCounter& operator=(const FetchAddCounter&) = delete;

  // Adds x. Wait-free: one instruction, whatever the other threads do.
  void add(std::int64_t x) noexcept { value_.fetch_add(x, std::memory_order_relaxed); }
  void increment() noexcept { add(1); }

  // The value after every add that happened-before this call, and possibly
  // some concurrent ones. Exact once the writers have been joined.
  std::int64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  // Own cache line, so a neighbouring object never shares the hot line.
  alignas(kCacheLineSize) std::atomic<std::int64_t> value_{0};
};

}  // namespace locklab
