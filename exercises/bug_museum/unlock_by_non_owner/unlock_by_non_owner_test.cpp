// unlock_by_non_owner_test.cpp — EXHIBIT unlock_by_non_owner: this test
// PASSES when it observes the bug: after a try_reserve() on a busy room, a
// second thread walks into the critical section beside the holder, and an
// item is lost. See README.md.
#include <gtest/gtest.h>

#include <cstdio>

#include "exercises/bug_museum/unlock_by_non_owner/scenario.hpp"
#include "exercises/bug_museum/unlock_by_non_owner/stock_room.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumUnlockByNonOwner, ABusyTryLetsASecondThreadInBesideTheHolder) {
  const NonOwnerUnlockRun run = run_non_owner_unlock<StockRoom<>>();
  ASSERT_TRUE(run.holder_was_inside) << "the holder never entered (the experiment did not run)";
  EXPECT_FALSE(run.busy_try_reserved) << "try_reserve on a busy room should fail (it does: the bug is elsewhere)";
  EXPECT_EQ(run.max_inside, 2) << "the bug did not show: nobody joined the holder in its critical section";
  EXPECT_EQ(run.items_left, 9) << "two reservations of 10 items left " << run.items_left
                               << " (the overlap should have lost one)";
  std::printf("observed: %d threads inside the critical section at once; 2 reservations of 10 items left %d\n",
              run.max_inside, run.items_left);
}

}  // namespace
}  // namespace locklab::museum
