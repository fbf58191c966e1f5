// check_then_act_counter_fixed_test.cpp — the exhibit's experiments on the
// fix: exactly `cap` successes every round, and no increment lost.
#include <gtest/gtest.h>

#include <chrono>

#include "exercises/bug_museum/check_then_act_counter/scenario.hpp"
#include "exercises/instructor/bug_museum/check_then_act_counter/capped_counter.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumCheckThenActCounterFixed, NeverMoreSuccessesThanTheCap) {
  const OvershootRun run = run_overshoot<fixed::CappedCounter>(10, 8, 5, 200us);
  EXPECT_EQ(run.rounds, 5);
  EXPECT_EQ(run.successes, 10);
  EXPECT_EQ(run.final_count, 10);
}

TEST(MuseumCheckThenActCounterFixed, NoIncrementIsLost) {
  const LostUpdateRun run = run_lost_updates<fixed::CappedCounter>(4, 2'000, 3);
  EXPECT_EQ(run.rounds, 3);
  EXPECT_EQ(run.final_count, run.expected);
}

}  // namespace
}  // namespace locklab::museum
