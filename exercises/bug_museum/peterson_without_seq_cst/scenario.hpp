// scenario.hpp — the experiment of the exhibit peterson_without_seq_cst, for
// any lock with PetersonLock's interface (lock(me), unlock(me), me = 0 or 1).
//
// Two threads run the same loop, at most `max_iterations` times each:
//   1. meet at a spin barrier (iteration i starts for both at once: the
//      only moment the bug can strike is when both call lock() together),
//      then wait a random 0-1023 empty loop turns (the barrier releases one
//      thread some 100 ns before the other; a random offset makes them call
//      lock() within a few ns of each other now and then, where a fixed
//      start seldom does: on the lab's 2-core VM, runs of 3 s showed the
//      bug 6 times in 6 with the offset, 3 in 6 without);
//   2. lock(me);
//   3. the critical section: count ourselves in (`inside`), bump a shared
//      counter with a plain load + store (correct only under mutual
//      exclusion), wait ~64 `pause`s so that a second thread has time to
//      arrive, look whether anyone else is inside, count ourselves out;
//   4. unlock(me).
// It stops at the first iteration that saw both threads inside, or after
// `time_cap` (checked every 1024 iterations). Bounded either way; the
// barrier yields while waiting, so a descheduled partner costs time slices,
// not a hang.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::museum {

struct MutualExclusionRun {
  std::int64_t iterations = 0;      // critical sections entered, both threads together
  std::int64_t overlaps = 0;        // entries that found the other thread inside: > 0 is the bug
  std::int64_t counter = 0;         // the plain counter: == iterations when exclusion held
  double seconds = 0;               // how long the run took
  bool hit_time_cap = false;        // stopped by `time_cap`, not by the count or the bug
};

template <class Lock>
MutualExclusionRun run_two_thread_exclusion(std::int64_t max_iterations, std::chrono::milliseconds time_cap) {
  struct alignas(kCacheLineSize) Slot {
    std::atomic<std::int64_t> value{0};
  };
  Lock lock;
  Slot arrived[2];                    // the barrier: the iteration each thread has reached
  Slot inside, overlaps, counter, entered;
  std::atomic<bool> stop{false};
  std::atomic<bool> capped{false};
  const auto start = std::chrono::steady_clock::now();

  auto worker = [&](int me) {
    const int other = 1 - me;
    std::uint64_t random = 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(me + 1);  // a per-thread LCG
    for (std::int64_t i = 1; i <= max_iterations && !stop.load(std::memory_order_relaxed); ++i) {
      arrived[me].value.store(i, std::memory_order_release);
      for (int spins = 0; arrived[other].value.load(std::memory_order_acquire) < i;) {
        if (++spins < 1000) continue;
        spins = 0;
        if (stop.load(std::memory_order_relaxed)) return;  // the partner has finished
        std::this_thread::yield();                         // the partner is descheduled: let it run
      }
      random = random * 6364136223846793005ULL + 1442695040888963407ULL;
      for (std::uint64_t turns = (random >> 33) % 1024; turns > 0; --turns) {
        std::atomic_signal_fence(std::memory_order_seq_cst);  // an empty turn the compiler must keep
      }
      lock.lock(me);
      const bool alone = inside.value.fetch_add(1, std::memory_order_relaxed) == 0;
      counter.value.store(counter.value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      for (int k = 0; k < 64; ++k) cpu_relax();
      const bool still_alone = inside.value.load(std::memory_order_relaxed) == 1;
      inside.value.fetch_sub(1, std::memory_order_relaxed);
      entered.value.fetch_add(1, std::memory_order_relaxed);
      lock.unlock(me);
      if (!alone || !still_alone) {
        overlaps.value.fetch_add(1, std::memory_order_relaxed);
        stop.store(true, std::memory_order_relaxed);
      }
      if (me == 0 && i % 1024 == 0 && std::chrono::steady_clock::now() - start > time_cap) {
        capped.store(true, std::memory_order_relaxed);
        stop.store(true, std::memory_order_relaxed);
      }
    }
    stop.store(true, std::memory_order_relaxed);  // the partner must not wait at the barrier for us
  };
  {
    std::jthread first(worker, 0);
    std::jthread second(worker, 1);
  }
  MutualExclusionRun run;
  run.iterations = entered.value.load();
  run.overlaps = overlaps.value.load();
  run.counter = counter.value.load();
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.hit_time_cap = capped.load();
  return run;
}

}  // namespace locklab::museum
