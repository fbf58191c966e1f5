// lost_wakeup_test.cpp — EXHIBIT lost_wakeup: this test PASSES when it
// observes the bug (a waiter that sleeps through a set() made while it was
// between its check and its sleep). See README.md.
#include <gtest/gtest.h>

#include <cstdio>

#include "exercises/bug_museum/lost_wakeup/ready_flag.hpp"
#include "exercises/bug_museum/lost_wakeup/scenario.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumLostWakeup, AWaiterSleepsThroughASetMadeInItsWindow) {
  const LostWakeupRun run = run_lost_wakeup<ReadyFlag>(5);
  EXPECT_GE(run.missed, 1) << "the bug did not show in " << run.rounds
                           << " rounds (the waiter was preempted for longer than its window every time?)";
  std::printf("observed: %d of %d rounds the waiter slept its whole 300 ms timeout although set() came 5 ms in\n",
              run.missed, run.rounds);
}

}  // namespace
}  // namespace locklab::museum
