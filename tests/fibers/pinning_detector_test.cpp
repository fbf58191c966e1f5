// Tests for fibers/pinning_detector.hpp: counting, the kept events, the
// report, and the detector catching a real fiber that blocks its carrier.
#include "fibers/pinning_detector.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "fibers/carrier_pool.hpp"
#include "fibers/fiber_lock.hpp"
#include "fibers/virtual_thread.hpp"

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;
using Kind = PinningEvent::Kind;

PinningEvent event(Kind kind, std::uint64_t fiber, std::chrono::nanoseconds d = 1ms) {
  return PinningEvent{.kind = kind, .fiber_id = fiber, .lock = nullptr, .lock_name = "L", .carrier = 0, .duration = d};
}

TEST(PinningDetector, CountsEveryEventAndKeepsTheFirstFew) {
  PinningDetector d(3);
  for (std::uint64_t i = 1; i <= 5; ++i) d.record(event(Kind::kWaitingForLock, i));
  d.record(event(Kind::kBlockedWhileHolding, 6));
  EXPECT_EQ(d.count(Kind::kWaitingForLock), 5u);
  EXPECT_EQ(d.count(Kind::kBlockedWhileHolding), 1u);
  EXPECT_EQ(d.count(), 6u);
  EXPECT_EQ(d.blocked_time(), 6ms);
  const auto kept = d.first_events();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].fiber_id, 1u);
  EXPECT_EQ(kept[2].fiber_id, 3u);
}

TEST(PinningDetector, DisabledRecordsNothing) {
  PinningDetector d;
  d.set_enabled(false);
  d.record(event(Kind::kWaitingForLock, 1));
  EXPECT_EQ(d.count(), 0u);
  EXPECT_TRUE(d.first_events().empty());
  d.set_enabled(true);
  d.record(event(Kind::kWaitingForLock, 1));
  EXPECT_EQ(d.count(), 1u);
}

TEST(PinningDetector, ConcurrentRecordsAreAllCounted) {
  PinningDetector d(PinningDetector::kMaxKept + 100);  // clamped to kMaxKept
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) d.record(event(Kind::kWaitingForLock, static_cast<std::uint64_t>(t)));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(d.count(), 40000u);
  EXPECT_EQ(d.first_events().size(), PinningDetector::kMaxKept);
}

TEST(PinningDetector, ReportNamesFiberLockAndKind) {
  PinningDetector d;
  d.record(event(Kind::kBlockedWhileHolding, 42, 12ms));
  std::ostringstream out;
  d.report(out);
  EXPECT_NE(out.str().find("1 events"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("fiber #42"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("blocked-while-holding L@"), std::string::npos) << out.str();
}

TEST(PinningDetector, CatchesAFiberThatBlocksItsCarrier) {
  CarrierPool pool(1);
  PinningMonitor monitor("db-monitor");
  std::uint64_t culprit = 0;
  pool.spawn([] { VirtualThread::sleep_for(1ms); });  // innocent: unpinned I/O
  pool.spawn([&] {
    culprit = VirtualThread::current()->id();
    monitor.lock();
    VirtualThread::sleep_for(20ms);  // I/O while holding a monitor: pinned
    monitor.unlock();
  });
  ASSERT_TRUE(pool.join_for(10s));
  ASSERT_EQ(pool.detector().count(), 1u);
  const PinningEvent e = pool.detector().first_events().at(0);
  EXPECT_EQ(e.kind, Kind::kBlockedWhileHolding);
  EXPECT_EQ(e.fiber_id, culprit);
  EXPECT_EQ(e.lock, &monitor);
  EXPECT_STREQ(e.lock_name, "db-monitor");
  EXPECT_GE(e.duration, 20ms);
}

}  // namespace
}  // namespace locklab::fibers
