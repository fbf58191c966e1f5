// scenario.hpp — the experiment of the exhibit lost_wakeup, for any flag with
// ReadyFlag's interface (the exhibit, and the instructor's fix).
//
// One round: a waiter calls wait_for(timeout); once it has started, the
// setter waits `set_after` (a quarter of the window: the waiter has checked
// the flag and is in its window by then) and calls set(). A round is a
// MISSED wake-up if wait_for returned false although set() was called long
// before its timeout. Stops at the first missed round.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace locklab::museum {

struct LostWakeupRun {
  int rounds = 0;  // rounds run
  int missed = 0;  // rounds where the waiter timed out although set() had been called
};

template <class Flag>
LostWakeupRun run_lost_wakeup(int max_rounds, std::chrono::milliseconds window = std::chrono::milliseconds(20),
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(300)) {
  LostWakeupRun run;
  for (int round = 0; round < max_rounds && run.missed == 0; ++round) {
    Flag flag(window);
    std::atomic<bool> started{false};
    bool woke = false;
    std::thread waiter([&] {
      started.store(true, std::memory_order_release);
      woke = flag.wait_for(timeout);
    });
    while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
    std::this_thread::sleep_for(window / 4);
    flag.set();
    waiter.join();  // bounded: wait_for gives up after `timeout`
    ++run.rounds;
    if (!woke) ++run.missed;
  }
  return run;
}

}  // namespace locklab::museum
