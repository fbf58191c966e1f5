#include "primitives/mcs_lock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::McsLock> {
  static constexpr bool fifo = true;
};

template <>
struct locklab::testing::LockTraits<locklab::McsParkingLock> {
  static constexpr bool fifo = true;
};

using McsLockTypes = ::testing::Types<locklab::McsLock, locklab::McsParkingLock>;
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

TEST(McsParkingLockTest, QueuedWaitersParkAndEveryOneIsWoken) {
  // The holder keeps the lock for 200 ms, ~50,000 times the spin budget
  // (kSpinPolls polls of ~20 ns): queued waiters must park rather than spin,
  // and each hand-off to a parked waiter must wake it (a lost wake-up hangs
  // the join below until ctest's timeout). FIFO order itself is checked by
  // the conformance suite.
  McsParkingLock lock;
  lock.lock();
  int acquired = 0;
  {
    std::vector<std::jthread> waiters;
    for (int i = 0; i < 3; ++i) {
      waiters.emplace_back([&] {
        lock.lock();
        ++acquired;
        lock.unlock();
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lock.unlock();
  }
  EXPECT_EQ(acquired, 3);
  const LockStatsSnapshot s = lock.stats();
  EXPECT_GE(s.parks, 1) << "no waiter parked while the lock was held for 200 ms";
  EXPECT_GE(s.wakes, s.parks) << "a parked waiter got the lock without being woken";
  EXPECT_LT(s.spins, 3 * (McsLock::kSpinPolls + 1)) << "waiters kept spinning past their budget";
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace
}  // namespace locklab
