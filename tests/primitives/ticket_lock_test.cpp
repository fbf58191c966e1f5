#include "primitives/ticket_lock.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::TicketLock> {
  static constexpr bool fifo = true;
};

using TicketLockTypes = ::testing::Types<locklab::TicketLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(TicketLock, LockConformance, TicketLockTypes);

namespace locklab {
namespace {

TEST(TicketLockTest, StatsCountContendedAcquires) {
  TicketLock lock;
  const testing::ContentionRun run = testing::contend_until_stats_show_it(lock);
  EXPECT_EQ(run.guarded, run.made) << "lost updates inside the lock";
  EXPECT_GT(lock.stats().contended_acquires, 0) << "4 threads on 2 cores never contended";
  EXPECT_EQ(lock.stats().parks, 0) << "a spin lock never parks";
}

TEST(TicketLockTest, QueueLengthCountsWaiters) {
  TicketLock lock;
  EXPECT_EQ(lock.queue_length(), 0);
  lock.lock();
  EXPECT_EQ(lock.queue_length(), 0);
  EXPECT_TRUE(lock.is_locked());
  std::jthread waiter([&] {
    lock.lock();
    lock.unlock();
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lock.queue_length() != 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(lock.queue_length(), 1);
  EXPECT_FALSE(lock.try_lock()) << "try_lock must not jump the queue";
  lock.unlock();
  waiter.join();
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace
}  // namespace locklab
