#include "primitives/mcs_lock.hpp"

#include <gtest/gtest.h>

#include <latch>
#include <thread>
#include <vector>

#include "primitives/cpu_relax.hpp"
#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::McsLock> {
  static constexpr bool fifo = true;
};

using McsLockTypes = ::testing::Types<locklab::McsLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(McsLock, LockConformance, McsLockTypes);

namespace locklab {
namespace {

TEST(McsLockTest, StatsCountContendedAcquires) {
  // 4 threads on 2 cores: bounded rounds until some acquire was contended.
  McsLock lock;
  std::uint64_t n = 0;
  for (int round = 0; round < 50 && lock.stats().contended_acquires == 0; ++round) {
    std::latch start(4);
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        start.arrive_and_wait();  // start together, so they overlap
        for (int i = 0; i < 200; ++i) {
          lock.lock();
          ++n;
          // Hold a little (~2 us) now and then, so others find it held.
          if (i % 8 == 0) for (int k = 0; k < 100; ++k) cpu_relax();
          lock.unlock();
        }
      });
    }
  }
  EXPECT_GT(lock.stats().contended_acquires, 0);
  EXPECT_EQ(lock.stats().parks, 0) << "a spin lock never parks";
  EXPECT_EQ(n % 800, 0u);
}


TEST(McsLockTest, OneThreadHoldsTwoLocksInAnyOrder) {
  McsLock a;
  McsLock b;
  a.lock();
  b.lock();
  a.unlock();  // not LIFO: release the first one first
  EXPECT_TRUE(b.is_locked());
  EXPECT_FALSE(a.is_locked());
  b.unlock();
  EXPECT_FALSE(b.is_locked());
  // And under contention: two threads each take both, in opposite release order.
  std::uint64_t n = 0;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 500; ++i) {
          a.lock();
          b.lock();
          ++n;
          if (t % 2 == 0) {
            a.unlock();
            b.unlock();
          } else {
            b.unlock();
            a.unlock();
          }
        }
      });
    }
  }
  EXPECT_EQ(n, 2000u);
}

TEST(McsLockTest, MoreLocksHeldThanInlineNodes) {
  // Beyond kNodesPerThread locks held at once the pool falls back to the heap.
  constexpr int kLocks = detail::McsNodePool::kNodesPerThread * 2 + 3;
  std::vector<McsLock> locks(kLocks);
  for (auto& l : locks) l.lock();
  for (auto& l : locks) EXPECT_TRUE(l.is_locked());
  for (auto& l : locks) EXPECT_FALSE(l.try_lock());
  for (auto& l : locks) l.unlock();
  for (auto& l : locks) EXPECT_FALSE(l.is_locked());
}

}  // namespace
}  // namespace locklab
