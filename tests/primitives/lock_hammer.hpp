// lock_hammer.hpp — the contention driver the parking mutexes' tests share:
// `threads` threads x `iterations` lock/unlock, sleeping `hold` inside the
// lock every `hold_every`-th time (the sleep takes the holder off its core,
// so waiters outlast any spin budget and park). Returns the critical
// sections counted with a plain counter, which only mutual exclusion keeps
// exact (and which TSan checks for races).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace locklab::testing {

template <class L>
std::uint64_t hammer(L& lock, int threads, int iterations,
                     std::chrono::microseconds hold = std::chrono::microseconds(0), int hold_every = 1) {
  std::uint64_t n = 0;
  {
    std::vector<std::jthread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        for (int i = 0; i < iterations; ++i) {
          lock.lock();
          ++n;
          if (hold.count() > 0 && i % hold_every == 0) std::this_thread::sleep_for(hold);
          lock.unlock();
        }
      });
    }
  }  // joins
  return n;
}

}  // namespace locklab::testing
