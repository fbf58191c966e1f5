#include "primitives/cyclic_barrier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using locklab::testing::eventually;

enum class Got { kNothing, kIndex, kBroken, kTimeout, kOther };

TEST(CyclicBarrier, RoundsTripTogetherWithTheActionOncePerRound) {
  constexpr int kParties = 4;
  constexpr int kRounds = 50;
  int actions = 0;            // plain: the barrier's lock orders it
  int arrived[kParties] = {};  // plain: written before await, read by the action
  int action_saw_all = 0;
  CyclicBarrier barrier(kParties, [&] {
    ++actions;
    if (std::count(arrived, arrived + kParties, actions) == kParties) ++action_saw_all;
  });
  std::mutex m;
  std::vector<std::vector<int>> indices(kRounds);
  {
    std::vector<std::jthread> threads;
    for (int p = 0; p < kParties; ++p) {
      threads.emplace_back([&, p] {
        for (int r = 0; r < kRounds; ++r) {
          arrived[p] = r + 1;
          const int index = barrier.await();
          std::lock_guard g(m);
          indices[static_cast<std::size_t>(r)].push_back(index);
        }
      });
    }
  }
  EXPECT_EQ(actions, kRounds);
  EXPECT_EQ(action_saw_all, kRounds) << "the action ran before every party had arrived";
  for (auto& round : indices) {
    std::sort(round.begin(), round.end());
    EXPECT_EQ(round, (std::vector<int>{0, 1, 2, 3})) << "arrival indices are a permutation of 0..parties-1";
  }
  EXPECT_FALSE(barrier.is_broken());
  EXPECT_EQ(barrier.number_waiting(), 0);
}

Got outcome(CyclicBarrier& b, std::chrono::milliseconds timeout) {
  try {
    if (timeout.count() < 0) {
      (void)b.await();
    } else {
      (void)b.await_for(timeout);
    }
    return Got::kIndex;
  } catch (const BarrierTimeout&) {
    return Got::kTimeout;
  } catch (const BrokenBarrier&) {
    return Got::kBroken;
  } catch (...) {
    return Got::kOther;
  }
}

TEST(CyclicBarrier, ATimeoutBreaksTheBarrierForEveryone) {
  CyclicBarrier barrier(4);
  std::atomic<Got> untimed_a{Got::kNothing};
  std::atomic<Got> untimed_b{Got::kNothing};
  std::jthread a([&] { untimed_a.store(outcome(barrier, -1ms)); });
  std::jthread b([&] { untimed_b.store(outcome(barrier, -1ms)); });
  ASSERT_TRUE(eventually([&] { return barrier.number_waiting() == 2; }));
  const auto t0 = Clock::now();
  EXPECT_EQ(outcome(barrier, 30ms), Got::kTimeout);
  EXPECT_GE(Clock::now() - t0, 30ms);
  a.join();
  b.join();
  EXPECT_EQ(untimed_a.load(), Got::kBroken);
  EXPECT_EQ(untimed_b.load(), Got::kBroken);
  EXPECT_TRUE(barrier.is_broken());
  EXPECT_EQ(outcome(barrier, -1ms), Got::kBroken) << "a broken barrier refuses at once";
  EXPECT_EQ(barrier.number_waiting(), 0);

  barrier.reset();
  EXPECT_FALSE(barrier.is_broken());
  std::vector<std::jthread> round;
  std::atomic<int> passed{0};
  for (int i = 0; i < 4; ++i) {
    round.emplace_back([&] {
      if (outcome(barrier, 10'000ms) == Got::kIndex) passed.fetch_add(1);
    });
  }
  round.clear();
  EXPECT_EQ(passed.load(), 4) << "after reset() a full round trips";
}

TEST(CyclicBarrier, ZeroTimeoutBreaksUnlessItTrips) {
  CyclicBarrier one(1);
  EXPECT_EQ(outcome(one, 0ms), Got::kIndex) << "the last party trips even with no time left";
  CyclicBarrier two(2);
  EXPECT_EQ(outcome(two, 0ms), Got::kTimeout);
  EXPECT_TRUE(two.is_broken());
}

TEST(CyclicBarrier, ResetBreaksTheWaitingGeneration) {
  CyclicBarrier barrier(3);
  std::atomic<Got> got{Got::kNothing};
  std::jthread waiter([&] { got.store(outcome(barrier, -1ms)); });
  ASSERT_TRUE(eventually([&] { return barrier.number_waiting() == 1; }));
  barrier.reset();
  waiter.join();
  EXPECT_EQ(got.load(), Got::kBroken);
  EXPECT_FALSE(barrier.is_broken()) << "reset starts a fresh generation";
}

TEST(CyclicBarrier, AThrowingActionBreaksTheBarrier) {
  CyclicBarrier barrier(2, [] { throw std::runtime_error("action failed"); });
  std::atomic<Got> waiter_got{Got::kNothing};
  std::jthread waiter([&] { waiter_got.store(outcome(barrier, -1ms)); });
  ASSERT_TRUE(eventually([&] { return barrier.number_waiting() == 1; }));
  EXPECT_THROW((void)barrier.await(), std::runtime_error);
  waiter.join();
  EXPECT_EQ(waiter_got.load(), Got::kBroken);
  EXPECT_TRUE(barrier.is_broken());
}

TEST(CyclicBarrier, InvalidPartiesThrow) {
  EXPECT_THROW(CyclicBarrier(0), std::invalid_argument);
  EXPECT_THROW(CyclicBarrier(-3), std::invalid_argument);
}

}  // namespace
}  // namespace locklab
