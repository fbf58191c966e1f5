// lost_wakeup_fixed_test.cpp — the exhibit's experiment on the fix: no
// round may miss its wake-up, with the same widened window.
#include <gtest/gtest.h>

#include "exercises/bug_museum/lost_wakeup/scenario.hpp"
#include "exercises/instructor/bug_museum/lost_wakeup/ready_flag.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumLostWakeupFixed, NoWaiterSleepsThroughASet) {
  const LostWakeupRun run = run_lost_wakeup<fixed::ReadyFlag>(5);
  EXPECT_EQ(run.rounds, 5);
  EXPECT_EQ(run.missed, 0) << "the fixed flag still lost a wake-up";
}

}  // namespace
}  // namespace locklab::museum
