// Tests for fibers/carrier_pool.hpp. A multi-carrier pool uses Boost's
// work_stealing, which allows one pool per process (see the header): ctest
// runs every test case in its own process, so each case may build one; run
// by hand in one process, the later cases skip themselves.
#include "fibers/carrier_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>

#include <boost/fiber/operations.hpp>

#include "fibers/virtual_thread.hpp"

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;

#define SKIP_IF_WORK_STEALING_USED()                                                       \
  if (CarrierPool::work_stealing_used())                                                   \
  GTEST_SKIP() << "this process already built a work-stealing pool (Boost 1.74 allows one); " \
                  "run this case alone: --gtest_filter=" << ::testing::UnitTest::GetInstance()->current_test_info()->name()

TEST(CarrierPool, RejectsBadOptions) {
  EXPECT_THROW(CarrierPool(0), std::invalid_argument);
  EXPECT_THROW(CarrierPool(CarrierPool::Options{.carriers = 1, .stack_bytes = 1024}), std::invalid_argument);
}

TEST(CarrierPool, OneCarrierRunsEveryFiberAndJoins) {
  CarrierPool pool(1);
  EXPECT_FALSE(pool.work_stealing());
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) pool.spawn([&] { ran.fetch_add(1, std::memory_order_relaxed); });
  pool.join();
  EXPECT_EQ(ran.load(), 1000);
  EXPECT_EQ(pool.spawned(), 1000u);
}

TEST(CarrierPool, OneCarrierPoolsCanBeCreatedRepeatedly) {
  // round_robin has no static state (unlike work_stealing).
  for (int round = 0; round < 3; ++round) {
    CarrierPool pool(1);
    std::atomic<int> ran{0};
    for (int i = 0; i < 10; ++i) pool.spawn([&] { ran.fetch_add(1); });
    pool.join();
    EXPECT_EQ(ran.load(), 10);
  }
}

TEST(CarrierPool, SecondWorkStealingPoolInOneProcessIsRefused) {
  if (!CarrierPool::work_stealing_used()) {
    CarrierPool first(2);
    EXPECT_TRUE(first.work_stealing());
  }
  EXPECT_TRUE(CarrierPool::work_stealing_used());
  EXPECT_THROW(CarrierPool(2), std::logic_error);
  EXPECT_THROW(CarrierPool(3), std::logic_error);
}

TEST(CarrierPool, FibersRunOnEveryCarrierAndMigrate) {
  SKIP_IF_WORK_STEALING_USED();
  // Spinning idle carriers steal eagerly, which makes migration quick to see.
  CarrierPool pool(CarrierPool::Options{.carriers = 2, .idle = CarrierPool::Idle::kSpin});
  std::atomic<bool> seen_carrier[2] = {false, false};
  std::atomic<int> migrations{0};
  std::atomic<int> bad_carrier{0};
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  for (int f = 0; f < 64; ++f) {
    pool.spawn([&] {
      while (std::chrono::steady_clock::now() < give_up &&
             (migrations.load() < 8 || !seen_carrier[0].load() || !seen_carrier[1].load())) {
        const int before = VirtualThread::carrier();
        boost::this_fiber::sleep_for(200us);
        const int after = VirtualThread::carrier();
        if (before < 0 || before > 1 || after < 0 || after > 1) bad_carrier.fetch_add(1);
        if (before >= 0 && before <= 1) seen_carrier[before].store(true);
        if (before != after) migrations.fetch_add(1);
      }
    });
  }
  pool.join();
  EXPECT_EQ(bad_carrier.load(), 0);
  EXPECT_TRUE(seen_carrier[0].load());
  EXPECT_TRUE(seen_carrier[1].load());
  EXPECT_GE(migrations.load(), 8) << "no fiber resumed on another carrier within 5 s";
}

TEST(CarrierPool, FibersCanSpawnFibers) {
  CarrierPool pool(1);
  std::atomic<int> leaves{0};
  for (int i = 0; i < 10; ++i) {
    pool.spawn([&] {
      for (int j = 0; j < 10; ++j) pool.spawn([&] { leaves.fetch_add(1); });
    });
  }
  pool.join();  // waits for the children too: they were counted when spawned
  EXPECT_EQ(leaves.load(), 100);
}

TEST(CarrierPool, JoinRethrowsTheFirstExceptionOnce) {
  CarrierPool pool(1);
  pool.spawn([] { throw std::runtime_error("boom"); });
  EXPECT_THROW(pool.join(), std::runtime_error);
  EXPECT_NO_THROW(pool.join());
}

TEST(CarrierPool, JoinFromOwnFiberIsRefused) {
  CarrierPool pool(1);
  std::atomic<bool> refused{false};
  pool.spawn([&] {
    try {
      pool.join();
    } catch (const std::logic_error&) {
      refused = true;
    }
  });
  ASSERT_TRUE(pool.join_for(5s));
  EXPECT_TRUE(refused.load());
}

TEST(CarrierPool, JoinForTimesOutWhileAFiberRuns) {
  CarrierPool pool(1);
  std::atomic<bool> release{false};
  pool.spawn([&] {
    while (!release.load()) boost::this_fiber::sleep_for(1ms);
  });
  EXPECT_FALSE(pool.join_for(20ms));
  release = true;
  EXPECT_TRUE(pool.join_for(5s));
}

TEST(CarrierPool, FixedStacksWorkToo) {
  CarrierPool pool(CarrierPool::Options{.carriers = 1, .stack = CarrierPool::Stack::kFixed, .stack_bytes = 32 * 1024});
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) pool.spawn([&] { ran.fetch_add(1); });
  pool.join();
  EXPECT_EQ(ran.load(), 100);
}

TEST(CarrierPool, EveryFiberHasItsOwnVirtualThread) {
  CarrierPool pool(1);
  std::mutex m;
  std::set<std::uint64_t> ids;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 50; ++i) {
    pool.spawn([&] {
      VirtualThread* self = VirtualThread::current();
      if (self == nullptr) {
        mismatches.fetch_add(1);
        return;
      }
      boost::this_fiber::yield();
      if (VirtualThread::current() != self || self->detector() != &pool.detector()) mismatches.fetch_add(1);
      std::lock_guard<std::mutex> lock(m);
      ids.insert(self->id());
    });
  }
  pool.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(VirtualThread::current(), nullptr);  // the test's own thread is no carrier
  EXPECT_EQ(VirtualThread::carrier(), -1);
}

}  // namespace
}  // namespace locklab::fibers
