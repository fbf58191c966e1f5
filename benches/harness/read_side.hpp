// read_side.hpp — the read side of a shared object, measured while writers
// run: perfbook's count/ experiment ("how much does reading a statistical
// counter cost while N threads update it?") on the contention harness.
//
// What one measurement is
// -----------------------
// w.waiters writer threads run `write(i)` exactly as run_contention runs any
// operation (same deadline, same counts, same CPU and wall clocks), and ONE
// extra reader thread calls `read()` in a loop over the same window. The
// writers' result is the ContentionResult (so items_per_second stays "writes
// per second", now with a reader present); the reader's is a ReadSide:
//   reads          calls of read() in the window;
//   wall_seconds   the reader's window (from the writers' start signal until
//                  all writers left, as run_contention's EventSource is called
//                  exactly then: see contention.hpp);
//   cpu_seconds    the reader thread's own CPU time in that window
//                  (CLOCK_THREAD_CPUTIME_ID): time it was descheduled does
//                  not count, so cpu_seconds / reads is the cost of one read
//                  when the reader runs, and reads / wall_seconds is what a
//                  reader gets on a machine shared with the writers.
// With more writers than cores the two differ a lot: the reader gets about
// cores / (writers + 1) of a core, whatever a read costs.
//
// Why the reader is not one of the waiters: it does a different operation,
// and folding its reads into the writers' counts would make throughput,
// ns_per_op and fairness mean nothing.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include "benches/harness/contention.hpp"

namespace locklab::bench {

struct ReadSide {
  std::uint64_t reads = 0;
  double wall_seconds = 0;
  double cpu_seconds = 0;

  double reads_per_second() const noexcept { return wall_seconds > 0 ? static_cast<double>(reads) / wall_seconds : 0; }
  // Reader CPU nanoseconds per read (0 when it read nothing).
  double cpu_ns_per_read() const noexcept { return reads > 0 ? cpu_seconds * 1e9 / static_cast<double>(reads) : 0; }
};

namespace detail {
inline double thread_cpu_seconds() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace detail

// Runs w.waiters writers of `write(i)` (run_contention) and one reader of
// `read()` over the same window. `events`, if given, is sampled as by
// run_contention. Throws what run_contention throws (the reader is then
// stopped and joined before the exception leaves).
template <class Write, class Read>
std::pair<ContentionResult, ReadSide> run_with_reader(const Workload& w, Write write, Read read,
                                                      const EventSource& events = {}) {
  // 0: before the window; 1: reading; 2: stop. Only the EventSource below
  // and the guard move it forward; the reader parks on it until it is 1.
  std::atomic<int> phase{0};
  ReadSide side;
  std::thread reader([&] {
    phase.wait(0, std::memory_order_acquire);
    const double cpu0 = detail::thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t n = 0;
    while (phase.load(std::memory_order_relaxed) == 1) {
      read();
      ++n;
    }
    side.cpu_seconds = detail::thread_cpu_seconds() - cpu0;
    side.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    side.reads = n;  // published to the caller by join()
  });
  struct StopAndJoin {
    std::atomic<int>& phase;
    std::thread& reader;
    ~StopAndJoin() {
      phase.store(2, std::memory_order_release);
      phase.notify_all();
      reader.join();
    }
  };
  ContentionResult r;
  {
    StopAndJoin guard{phase, reader};
    // run_contention calls this just before the writers' start signal and
    // after they all joined: the reader's window is theirs.
    EventSource window = [&] {
      phase.store(phase.load(std::memory_order_relaxed) + 1, std::memory_order_release);
      phase.notify_all();
      return events ? events() : EventCounts{};
    };
    r = run_contention(w, std::move(write), window);
  }
  return {std::move(r), side};
}

}  // namespace locklab::bench
