// lost_wakeup_test.cpp — EXHIBIT lost_wakeup, graded (graded.hpp): no waiter
// may sleep through a set() made while it was between its check and its
// sleep. On the exhibit it fails with "BUG SHOWN"; on a fix it passes.
// See README.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <ready_flag.hpp>

#include "exercises/bug_museum/graded.hpp"
#include "exercises/bug_museum/lost_wakeup/scenario.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumLostWakeup, NoWaiterSleepsThroughASetMadeInItsWindow) {
  const LostWakeupRun run = run_lost_wakeup<graded::ReadyFlag>(5);
  EXPECT_EQ(run.missed, 0) << "BUG SHOWN: in round " << run.rounds
                           << " the waiter slept its whole 300 ms timeout although set() came 5 ms in";
  std::printf("observed: %d of %d rounds the waiter slept its whole 300 ms timeout although set() came 5 ms in\n",
              run.missed, run.rounds);
}

}  // namespace
}  // namespace locklab::museum
