#include "primitives/mcs_lock.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::McsLock> {
  static constexpr bool fifo = true;
};

using McsLockTypes = ::testing::Types<locklab::McsLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(McsLock, LockConformance, McsLockTypes);

namespace locklab {
namespace {

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
