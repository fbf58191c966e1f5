#include "primitives/ticket_lock.hpp"

#include <gtest/gtest.h>

#include <latch>
#include <thread>
#include <vector>

#include "primitives/cpu_relax.hpp"
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
  // 4 threads on 2 cores: bounded rounds until some acquire was contended.
  TicketLock lock;
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
