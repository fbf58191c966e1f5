#include "benches/harness/read_write.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <shared_mutex>
#include <stdexcept>
#include <string>

#include "benches/read_write_peers.hpp"
#include "primitives/reentrant_read_write_lock.hpp"

namespace locklab::bench {
namespace {

using std::chrono::milliseconds;

double extra(const ContentionResult& r, const std::string& name) {
  for (const auto& [n, v] : r.extra) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

bool has_extra(const ContentionResult& r, const std::string& name) {
  for (const auto& [n, v] : r.extra) {
    if (n == name) return true;
  }
  return false;
}

// A shared_mutex that counts what the harness did with it.
struct CountingRw {
  std::shared_mutex m;
  std::atomic<std::int64_t> reads{0};
  std::int64_t writes = 0;  // plain, under the write lock
  void lock() { m.lock(); }
  void unlock() {
    ++writes;
    m.unlock();
  }
  void lock_shared() { m.lock_shared(); }
  void unlock_shared() {
    reads.fetch_add(1, std::memory_order_relaxed);
    m.unlock_shared();
  }
};

TEST(ReadWriteHarness, CountsReadsAndWritesSeparatelyAndTheMixFollowsTheKnob) {
  CountingRw rw;
  Workload w{.waiters = 3, .duration = milliseconds(60)};
  const auto r = run_read_write_contention(rw, w, ReadWriteMix{.read_permille = 900});
  const double wall = r.wall_seconds;
  ASSERT_GT(r.total_ops(), 1000u);
  EXPECT_EQ(static_cast<std::uint64_t>(rw.reads.load() + rw.writes), r.total_ops());
  EXPECT_NEAR(extra(r, "reads_per_s") * wall, static_cast<double>(rw.reads.load()), 1.0);
  EXPECT_NEAR(extra(r, "writes_per_s") * wall, static_cast<double>(rw.writes), 1.0);
  // The draw is pseudo-random: 90% within a few points over > 1000 draws.
  EXPECT_NEAR(extra(r, "read_fraction"), 0.9, 0.05);
  EXPECT_TRUE(has_extra(r, "write_wait_p99_us"));
  EXPECT_FALSE(has_extra(r, "optimistic_retries_per_read")) << "not an optimistic lock";
}

TEST(ReadWriteHarness, AllReadsMakeNoWritesAndNoWriterWait) {
  CountingRw rw;
  Workload w{.waiters = 2, .duration = milliseconds(30)};
  const auto r = run_read_write_contention(rw, w, ReadWriteMix{.read_permille = 1000});
  EXPECT_EQ(rw.writes, 0);
  EXPECT_EQ(extra(r, "read_fraction"), 1.0);
  EXPECT_FALSE(has_extra(r, "write_wait_p99_us"));
  const auto none = run_read_write_contention(rw, w, ReadWriteMix{.read_permille = 0});
  EXPECT_EQ(extra(none, "read_fraction"), 0.0);
}

TEST(ReadWriteHarness, OptimisticReadersReportRetries) {
  peers::StampedOptimistic l;
  Workload w{.waiters = 2, .duration = milliseconds(40)};
  const auto r = run_read_write_contention(l, w, ReadWriteMix{.read_permille = 500});
  const double retries = extra(r, "optimistic_retries_per_read");
  EXPECT_GE(retries, 0.0);
  EXPECT_LE(retries, 1.0) << "one optimistic try, then the read lock";
}

TEST(ReadWriteHarness, DrivesOurLocksAndThePeers) {
  Workload w{.waiters = 2, .duration = milliseconds(20)};
  const ReadWriteMix mix{.read_permille = 900};
  ReentrantReadWriteLock rrwl;
  EXPECT_GT(run_read_write_contention(rrwl, w, mix).total_ops(), 0u);
  peers::StampedPessimistic stamped;
  EXPECT_GT(run_read_write_contention(stamped, w, mix).total_ops(), 0u);
  peers::PthreadRwlock reader_first(PTHREAD_RWLOCK_PREFER_READER_NP);
  EXPECT_GT(run_read_write_contention(reader_first, w, mix).total_ops(), 0u);
  peers::PthreadRwlock writer_first(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  EXPECT_GT(run_read_write_contention(writer_first, w, mix).total_ops(), 0u);
}

TEST(ReadWriteHarness, AReadFractionOutsideThePermilleRangeThrows) {
  CountingRw rw;
  Workload w{.waiters = 1, .duration = milliseconds(10)};
  EXPECT_THROW(run_read_write_contention(rw, w, ReadWriteMix{.read_permille = 1001}), std::invalid_argument);
  EXPECT_THROW(run_read_write_contention(rw, w, ReadWriteMix{.read_permille = -1}), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::bench
