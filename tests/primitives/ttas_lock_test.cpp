#include "primitives/ttas_lock.hpp"

#include <gtest/gtest.h>

#include "tests/primitives/lock_conformance.hpp"

using TtasLockTypes = ::testing::Types<locklab::TtasLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(TtasLock, LockConformance, TtasLockTypes);

namespace locklab {
namespace {

TEST(TtasLockTest, StatsCountContendedAcquires) {
  TtasLock lock;
  const testing::ContentionRun run = testing::contend_until_stats_show_it(lock);
  EXPECT_EQ(run.guarded, run.made) << "lost updates inside the lock";
  EXPECT_GT(lock.stats().contended_acquires, 0) << "4 threads on 2 cores never contended";
  EXPECT_EQ(lock.stats().parks, 0) << "a spin lock never parks";
}

}  // namespace
}  // namespace locklab
