#include "benches/harness/read_side.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "primitives/fetch_add_counter.hpp"

namespace locklab::bench {
namespace {

using std::chrono::milliseconds;

TEST(ReadSideTest, WritersAreCountedAsWithoutAReaderAndTheReaderReads) {
  FetchAddCounter counter;
  std::atomic<std::uint64_t> reads_seen{0};
  Workload w{.waiters = 3, .duration = milliseconds(40)};
  auto [r, side] = run_with_reader(w, [&](int) { counter.increment(); },
                                   [&] { reads_seen.fetch_add(1, std::memory_order_relaxed); });
  ASSERT_EQ(r.ops_per_waiter.size(), 3u) << "the reader is not one of the waiters";
  EXPECT_EQ(static_cast<std::int64_t>(r.total_ops()), counter.get());
  EXPECT_GT(side.reads, 0u);
  EXPECT_EQ(side.reads, reads_seen.load()) << "every read() call is counted, and none after the window";
  EXPECT_GT(side.wall_seconds, 0.0);
  EXPECT_GE(side.cpu_seconds, 0.0);
  EXPECT_LE(side.cpu_seconds, side.wall_seconds + 0.05) << "one thread's CPU time fits in its wall time";
  EXPECT_GT(side.reads_per_second(), 0.0);
  EXPECT_GT(side.cpu_ns_per_read(), 0.0);
}

TEST(ReadSideTest, TheReaderRunsOnItsOwnThreadAndTheCallersEventsAreStillSampled) {
  std::atomic<std::thread::id> reader_id{};
  const std::thread::id caller = std::this_thread::get_id();
  Workload w{.waiters = 1, .duration = milliseconds(20)};
  auto [r, side] = run_with_reader(
      w, [](int) {}, [&] { reader_id.store(std::this_thread::get_id()); },
      [&] { return EventCounts{{"probe", 1.0}}; });
  EXPECT_GT(side.reads, 0u);
  EXPECT_NE(reader_id.load(), caller);
  ASSERT_EQ(r.event_deltas.size(), 1u) << "the caller's EventSource is still sampled before and after";
  EXPECT_EQ(r.event_deltas[0].first, "probe");
}

TEST(ReadSideTest, AnInvalidWorkloadThrowsAndStopsTheReader) {
  Workload w{.waiters = 0, .duration = milliseconds(10)};
  // Returns (by throwing) instead of hanging on a reader that never stops.
  EXPECT_THROW(run_with_reader(w, [](int) {}, [] {}), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::bench
