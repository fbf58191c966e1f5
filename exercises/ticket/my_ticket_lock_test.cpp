// my_ticket_lock_test.cpp — the checks of the exercise ticket: the lab's
// conformance suite with the FIFO promise (checked deterministically through
// queue_length()), plus queue_length() itself. Run with
//   exercises/check.sh ticket
#include <my_ticket_lock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/eventually.hpp"
#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::exercises::MyTicketLock> {
  static constexpr bool fifo = true;  // the promise a ticket lock makes
};

using MyTicketLocks = ::testing::Types<locklab::exercises::MyTicketLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyTicketLock, LockConformance, MyTicketLocks);

namespace locklab::exercises {
namespace {

TEST(MyTicketLockTest, QueueLengthCountsTheWaitersBehindTheHolder) {
  MyTicketLock lock;
  EXPECT_EQ(lock.queue_length(), 0) << "a free lock has nobody waiting";
  lock.lock();
  EXPECT_EQ(lock.queue_length(), 0) << "the holder is not waiting";
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      lock.lock();
      lock.unlock();
    });
  }
  const bool counted = testing::eventually([&] { return lock.queue_length() == 3; });
  if (!counted) {
    // Let them in anyway (never leave threads stuck behind a failed check).
    lock.unlock();
    for (auto& w : waiters) w.join();
    FAIL() << "3 threads blocked in lock() behind the holder, queue_length() = " << lock.queue_length();
  }
  EXPECT_FALSE(lock.try_lock()) << "try_lock succeeded on a held lock";
  lock.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(lock.queue_length(), 0) << "everyone left";
  EXPECT_TRUE(lock.try_lock()) << "try_lock failed on a free lock";
  lock.unlock();
}

}  // namespace
}  // namespace locklab::exercises
