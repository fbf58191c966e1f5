// read_write.hpp — the read-mostly workload on the contention harness: every
// waiter mixes reads and writes of one shared object guarded by a
// read-write lock, in a fixed proportion, on the same waiters axis as every
// other curve.
//
// What one measurement is
// -----------------------
// w.waiters threads run run_contention's loop (same deadline, clocks and
// per-waiter counts). Each operation is a read with probability
// read_permille / 1000, else a write, drawn from a per-waiter xorshift
// generator seeded by the waiter's index, so a point's sequence of reads
// and writes is the same for every lock (the comparison is paired) and no
// shared random state adds a contended line of its own. A read is
// lock_shared(); read_cs_ns of busy work; unlock_shared(). A write is
// lock(); write_cs_ns of busy work; unlock(). A lock that offers an
// optimistic read (read_optimistically(section) -> retries, e.g. a
// StampedLock adapter) does its reads through it instead.
//
// What is reported, besides run_contention's (throughput counts reads and
// writes together; fairness is over waiters' operations):
//   reads_per_s, writes_per_s   each kind over the run's wall time;
//   read_fraction               the fraction of operations that were reads
//                               (the draw's outcome, to check the knob);
//   optimistic_retries_per_read failed validations per read (optimistic
//                               locks only);
//   write_wait_p50_us, _p99_us  sampled latency of the write lock() call
//                               (latency_sampler.hpp), the writer's wait:
//                               what writer starvation looks like on a
//                               curve. Absent when the point made no write.
//
// Why one mixed loop per waiter and not dedicated reader and writer
// threads: the read fraction is then exact per waiter and the waiters axis
// keeps its meaning (N threads contending for one object); dedicated
// writers would make "waiters" two numbers.
#pragma once

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "benches/harness/busy_work.hpp"
#include "benches/harness/contention.hpp"
#include "benches/harness/latency_sampler.hpp"
#include "primitives/cache_line.hpp"

namespace locklab::bench {

// The read-write knobs of a point.
struct ReadWriteMix {
  int read_permille = 900;  // 0..1000: 1000 = reads only
  std::int64_t read_cs_ns = 0;
  std::int64_t write_cs_ns = 0;
};

template <class L>
concept SharedLockable = requires(L& l) {
  l.lock();
  l.unlock();
  l.lock_shared();
  l.unlock_shared();
};

// An optimistic reader: runs `section` (possibly several times) until a
// read validates, returns how many attempts failed.
template <class L>
concept OptimisticReadable = requires(L& l, void (*section)()) {
  { l.read_optimistically(section) } -> std::convertible_to<std::int64_t>;
};

namespace detail {
// Marsaglia's xorshift64: a few instructions, no shared state.
inline std::uint64_t xorshift64(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

struct alignas(kCacheLineSize) ReadWriteTally {
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::int64_t retries = 0;
  std::uint64_t rng = 0;
};
}  // namespace detail

// Throws std::invalid_argument for a read_permille outside 0..1000, and what
// run_contention throws.
template <class L>
  requires SharedLockable<L> || OptimisticReadable<L>
ContentionResult run_read_write_contention(L& lock, const Workload& w, const ReadWriteMix& mix,
                                           const EventSource& events = {}) {
  if (mix.read_permille < 0 || mix.read_permille > 1000) {
    throw std::invalid_argument("read_permille must be within 0..1000, got " + std::to_string(mix.read_permille));
  }
  using Clock = std::chrono::steady_clock;
  const std::size_t n = static_cast<std::size_t>(std::max(w.waiters, 1));
  std::vector<detail::ReadWriteTally> tallies(n);
  // Seeds: odd and distinct per waiter (xorshift's state must not be 0).
  for (std::size_t i = 0; i < n; ++i) tallies[i].rng = 0x9E3779B97F4A7C15ull * (i + 1) | 1;
  std::vector<LatencySampler> write_waits(n);
  const auto read_threshold = static_cast<std::uint64_t>(mix.read_permille);
  ContentionResult r = run_contention(
      w,
      [&](int i) {
        detail::ReadWriteTally& t = tallies[static_cast<std::size_t>(i)];
        if (detail::xorshift64(t.rng) % 1000 < read_threshold) {
          if constexpr (OptimisticReadable<L>) {
            t.retries += lock.read_optimistically([cs = mix.read_cs_ns] { BusyWork::spin_ns(cs); });
          } else {
            lock.lock_shared();
            BusyWork::spin_ns(mix.read_cs_ns);
            lock.unlock_shared();
          }
          ++t.reads;
        } else {
          LatencySampler& sampler = write_waits[static_cast<std::size_t>(i)];
          if (sampler.due()) {
            const Clock::time_point t0 = Clock::now();
            lock.lock();
            sampler.record(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(),
                           std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count());
          } else {
            lock.lock();
          }
          BusyWork::spin_ns(mix.write_cs_ns);
          lock.unlock();
          ++t.writes;
        }
      },
      events);
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::int64_t retries = 0;
  for (const auto& t : tallies) {
    reads += t.reads;
    writes += t.writes;
    retries += t.retries;
  }
  const double wall = r.wall_seconds > 0 ? r.wall_seconds : 1.0;
  r.extra.emplace_back("reads_per_s", static_cast<double>(reads) / wall);
  r.extra.emplace_back("writes_per_s", static_cast<double>(writes) / wall);
  r.extra.emplace_back("read_fraction",
                       reads + writes > 0 ? static_cast<double>(reads) / static_cast<double>(reads + writes) : 0.0);
  if constexpr (OptimisticReadable<L>) {
    r.extra.emplace_back("optimistic_retries_per_read",
                         reads > 0 ? static_cast<double>(retries) / static_cast<double>(reads) : 0.0);
  }
  const LatencyDistribution waits(write_waits);
  if (!waits.empty()) {
    r.extra.emplace_back("write_wait_p50_us", waits.percentile_ns(0.50) / 1e3);
    r.extra.emplace_back("write_wait_p99_us", waits.percentile_ns(0.99) / 1e3);
  }
  return r;
}

}  // namespace locklab::bench
