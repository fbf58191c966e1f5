// counter.hpp — the interface every counter in this folder shares, so tests
// and benchmarks can be written once and run over all of them.
//
//   FetchAddCounter   one hardware read-modify-write (`lock xadd`)
//   CasLoopCounter    AtomicInteger.getAndAdd: load, compare-exchange, retry
//   MutexCounter      a plain integer behind std::mutex
//   StripedCounter    Java's LongAdder: per-thread padded cells, summed on read
//
// All four are linearizable for add(); they differ in what get() promises
// while writers run (see each header) and, above all, in how they scale.
#pragma once

#include <concepts>
#include <cstdint>

namespace locklab {

// A thread-safe counter of 64-bit signed values (Java's `long`).
template <class C>
concept Counter = requires(C c, const C cc, std::int64_t x) {
  { c.add(x) } -> std::same_as<void>;
  { c.increment() } -> std::same_as<void>;
  { cc.get() } -> std::same_as<std::int64_t>;
};

}  // namespace locklab
