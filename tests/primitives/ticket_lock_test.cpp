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
