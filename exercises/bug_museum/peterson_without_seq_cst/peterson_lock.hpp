// peterson_lock.hpp — EXHIBIT peterson_without_seq_cst (bug museum; read
// README.md): Peterson's lock for two threads, the textbook algorithm,
// written with std::atomic and the orderings every lock of the lab uses:
// release for the stores, acquire for the loads. No seq_cst anywhere, so it
// compiles to plain `mov`s on x86, and it lets both threads in.
//
// The algorithm (Peterson, 1981)
// ------------------------------
// Thread `me` (0 or 1) announces that it wants in (interested_[me] = true),
// gives priority to the other thread (turn_ = other), then waits while the
// other thread is interested AND it is the other's turn. Proved correct for
// a machine on which every thread sees every write in one order: the
// proof's key step is "the thread that wrote turn_ last waits". Whether
// this machine is one of those is the question of the exhibit.
//
// No window is widened here: there is no sleep in the lock. The experiment
// (scenario.hpp) makes the two threads call lock() at the same instant, over
// and over, which is all the bug needs.
#pragma once

#include <atomic>

#include "primitives/cache_line.hpp"

namespace locklab::museum {

class PetersonLock {
 public:
  // `me` is 0 or 1: which of the two threads calls.
  void lock(int me) noexcept {
    const int other = 1 - me;
    interested_[me].flag.store(true, std::memory_order_release);  // "I want in"
    turn_.store(other, std::memory_order_release);                 // "but you go first"
    while (interested_[other].flag.load(std::memory_order_acquire) &&
           turn_.load(std::memory_order_acquire) == other) {
      // wait: the other wants in and it is its turn
    }
  }

  void unlock(int me) noexcept { interested_[me].flag.store(false, std::memory_order_release); }

 private:
  struct alignas(kCacheLineSize) Flag {
    std::atomic<bool> flag{false};
  };
  Flag interested_[2];
  alignas(kCacheLineSize) std::atomic<int> turn_{0};
};

}  // namespace locklab::museum
