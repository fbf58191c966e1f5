#include "primitives/waiter_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace locklab {
namespace {

TEST(WaiterGateTest, AdmitsUpToTheLimitAndNoMore) {
  WaiterGate gate(2);
  EXPECT_EQ(gate.max_waiters(), 2);
  auto a = gate.try_enter();
  auto b = gate.try_enter();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(gate.waiting(), 2);
  EXPECT_FALSE(gate.try_enter().has_value());
  EXPECT_EQ(gate.waiting(), 2) << "a refused try_enter must not leave a count behind";
  a.reset();  // the ticket leaves on destruction
  EXPECT_EQ(gate.waiting(), 1);
  auto c = gate.try_enter();
  EXPECT_TRUE(c.has_value());
  EXPECT_EQ(gate.waiting(), 2);
}

TEST(WaiterGateTest, TicketsMoveAndLeaveExactlyOnce) {
  WaiterGate gate(3);
  std::optional<WaiterGate::Ticket> t = gate.try_enter();
  ASSERT_TRUE(t.has_value());
  WaiterGate::Ticket moved = std::move(*t);
  EXPECT_FALSE(t->active());
  EXPECT_TRUE(moved.active());
  t.reset();  // a moved-from ticket leaves nothing
  EXPECT_EQ(gate.waiting(), 1);

  WaiterGate::Ticket other = *gate.try_enter();
  EXPECT_EQ(gate.waiting(), 2);
  other = std::move(moved);  // `other`'s own ticket leaves, it takes `moved`'s
  EXPECT_EQ(gate.waiting(), 1);
  other.leave();
  other.leave();  // idempotent
  EXPECT_FALSE(other.active());
  EXPECT_EQ(gate.waiting(), 0);
}

TEST(WaiterGateTest, InvalidAndClosedGates) {
  EXPECT_THROW(WaiterGate(-1), std::invalid_argument);
  WaiterGate closed(0);
  EXPECT_FALSE(closed.try_enter().has_value());
  EXPECT_EQ(closed.waiting(), 0);
}

// N > limit threads race for tickets at once and keep them: exactly `limit`
// must get one (neither more, which would break the bound, nor fewer, which
// would be a spurious refusal).
TEST(WaiterGateTest, ARaceOfMoreThreadsThanTheLimitGetsExactlyTheLimit) {
  constexpr int kThreads = 12;
  constexpr int kLimit = 5;
  constexpr int kRounds = 30;
  for (int round = 0; round < kRounds; ++round) {
    WaiterGate gate(kLimit);
    std::atomic<int> admitted{0};
    std::barrier start(kThreads);
    std::barrier hold(kThreads);
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
          start.arrive_and_wait();
          auto ticket = gate.try_enter();
          if (ticket) admitted.fetch_add(1);
          hold.arrive_and_wait();  // nobody leaves before everyone has tried
        });
      }
    }
    ASSERT_EQ(admitted.load(), kLimit) << "round " << round;
    EXPECT_EQ(gate.waiting(), 0);
  }
}

// Threads enter and leave as fast as they can. The number of tickets held
// at once, and every waiting() reading, must stay within the limit.
TEST(WaiterGateTest, BoundHoldsUnderChurn) {
  constexpr int kThreads = 10;
  constexpr int kLimit = 3;
  constexpr int kIterations = 4'000;
  WaiterGate gate(kLimit);
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::atomic<long> over_reads{0};
  std::atomic<long> admitted{0};
  std::atomic<long> refused{0};
  std::atomic<bool> stop{false};
  std::jthread observer([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (gate.waiting() > kLimit) over_reads.fetch_add(1);
      std::this_thread::yield();
    }
  });
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kIterations; ++i) {
          auto ticket = gate.try_enter();
          if (!ticket) {
            refused.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          admitted.fetch_add(1, std::memory_order_relaxed);
          const int now = inside.fetch_add(1) + 1;
          int seen = max_inside.load();
          while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
          }
          if (gate.waiting() > kLimit) over_reads.fetch_add(1);
          if (i % 8 == 0) std::this_thread::yield();  // hold it across a reschedule now and then
          inside.fetch_sub(1);
        }
      });
    }
  }
  stop = true;
  observer.join();
  EXPECT_LE(max_inside.load(), kLimit);
  EXPECT_EQ(over_reads.load(), 0) << "waiting() read above max_waiters()";
  EXPECT_EQ(admitted.load() + refused.load(), static_cast<long>(kThreads) * kIterations);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(gate.waiting(), 0);
}

// With a limit equal to the number of threads, each holding at most one
// ticket, there is always room: an exact gate never refuses.
TEST(WaiterGateTest, NeverRefusesWhileThereIsRoom) {
  constexpr int kThreads = 6;
  WaiterGate gate(kThreads);
  std::atomic<long> refused{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 20'000; ++i) {
          if (!gate.try_enter()) refused.fetch_add(1);
        }
      });
    }
  }
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(gate.waiting(), 0);
}

}  // namespace
}  // namespace locklab
