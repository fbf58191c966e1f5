// scenario.hpp — the experiments of the exhibit check_then_act_counter, for
// any counter with CappedCounter's interface (the exhibit, the fix).
//
// run_overshoot: `threads` threads call try_increment() until it refuses;
// the successes must equal the cap. Repeated (fresh counter each round)
// until a round overshoots, at most `rounds` times.
// run_lost_updates: `threads` threads call increment() `per_thread` times
// each; the count must equal threads x per_thread. Repeated likewise.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace locklab::museum {

struct OvershootRun {
  int rounds = 0;
  std::int64_t cap = 0;
  std::int64_t successes = 0;  // of the last round: > cap is the bug
  std::int64_t final_count = 0;
};

template <class Counter>
OvershootRun run_overshoot(std::int64_t cap, int threads, int rounds, std::chrono::microseconds window) {
  OvershootRun run;
  run.cap = cap;
  for (int r = 0; r < rounds; ++r) {
    Counter counter(cap, window);
    std::atomic<std::int64_t> successes{0};
    std::atomic<bool> go{false};
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
          while (!go.load()) std::this_thread::yield();
          while (counter.try_increment()) successes.fetch_add(1);
        });
      }
      go.store(true);
    }
    ++run.rounds;
    run.successes = successes.load();
    run.final_count = counter.get();
    if (run.successes != cap) break;
  }
  return run;
}

struct LostUpdateRun {
  int rounds = 0;
  std::int64_t expected = 0;
  std::int64_t final_count = 0;  // of the last round: < expected is the bug
};

template <class Counter>
LostUpdateRun run_lost_updates(int threads, int per_thread, int rounds) {
  LostUpdateRun run;
  run.expected = static_cast<std::int64_t>(threads) * per_thread;
  for (int r = 0; r < rounds; ++r) {
    Counter counter(/*cap=*/0);
    std::atomic<bool> go{false};
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
          while (!go.load()) std::this_thread::yield();
          for (int i = 0; i < per_thread; ++i) counter.increment();
        });
      }
      go.store(true);
    }
    ++run.rounds;
    run.final_count = counter.get();
    if (run.final_count != run.expected) break;
  }
  return run;
}

}  // namespace locklab::museum
