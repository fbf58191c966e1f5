#include "primitives/thread_slot.hpp"

#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "primitives/striped_counter.hpp"

namespace locklab {
namespace {

TEST(ThreadSlotTest, StableWithinAThread) {
  EXPECT_EQ(this_thread_slot(), this_thread_slot());
}

TEST(ThreadSlotTest, LiveThreadsHoldDistinctSlotsAndExitReturnsThem) {
  constexpr int kThreads = 12;
  const std::uint32_t before = thread_slots_in_use();
  std::vector<std::uint32_t> slots(kThreads);
  std::barrier all_have_slots(kThreads + 1);
  std::barrier may_exit(kThreads + 1);
  std::vector<std::jthread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      slots[static_cast<std::size_t>(i)] = this_thread_slot();
      all_have_slots.arrive_and_wait();
      may_exit.arrive_and_wait();
    });
  }
  all_have_slots.arrive_and_wait();
  EXPECT_EQ(std::set<std::uint32_t>(slots.begin(), slots.end()).size(), std::size_t{kThreads});
  EXPECT_EQ(thread_slots_in_use(), before + kThreads);
  may_exit.arrive_and_wait();
  threads.clear();
  EXPECT_EQ(thread_slots_in_use(), before) << "exiting threads must give their slots back";
}

TEST(ThreadSlotTest, FreedSlotsAreReusedSoSlotsStayDense) {
  // Start and finish many short-lived threads one after another: with reuse
  // the slots never climb past a few above what is already in use.
  std::uint32_t highest = 0;
  for (int i = 0; i < 200; ++i) {
    std::jthread t([&] { highest = std::max(highest, this_thread_slot()); });
  }
  EXPECT_LT(highest, thread_slots_in_use() + 8);
}

TEST(ThreadSlotTest, StripedCounterStaysExactPastItsCellCapacity) {
  // More live threads than StripedCounter has cells (kSegments x
  // kCellsPerSegment): the overflow threads must fall back to base, not lose
  // or misplace adds.
  constexpr int kThreads = static_cast<int>(StripedCounter::kSegments * StripedCounter::kCellsPerSegment) + 20;
  StripedCounter c;
  // Make the counter inflate first (some add must lose a race on base):
  // rounds of 4 racing threads until it has, bounded at 20 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.cell_count() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::jthread> warm;
    for (int t = 0; t < 4; ++t) warm.emplace_back([&] { for (int i = 0; i < 100'000; ++i) c.increment(); });
  }
  ASSERT_GT(c.cell_count(), 0u) << "4 threads for 20 s never contended on base";
  const std::int64_t warm_total = c.sum();
  std::barrier all_alive(kThreads);
  std::vector<std::jthread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      this_thread_slot();           // take a slot now, so that
      all_alive.arrive_and_wait();  // every thread holds its slot at once
      for (int k = 0; k < 100; ++k) c.increment();
    });
  }
  threads.clear();
  EXPECT_EQ(warm_total % 100'000, 0) << "every warm-up increment counted";
  EXPECT_EQ(c.cell_count(), StripedCounter::kSegments * StripedCounter::kCellsPerSegment)
      << "every segment is in use once more threads than cells have added";
  EXPECT_EQ(c.sum(), warm_total + std::int64_t{kThreads} * 100);
}

}  // namespace
}  // namespace locklab
