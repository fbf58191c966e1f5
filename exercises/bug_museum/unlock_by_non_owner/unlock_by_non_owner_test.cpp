// unlock_by_non_owner_test.cpp — EXHIBIT unlock_by_non_owner, graded
// (graded.hpp): after a try_reserve() on a busy room, nobody may walk into
// the critical section beside the holder, and no item may be lost. On the
// exhibit it fails with "BUG SHOWN"; on a fix it passes. See README.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <stock_room.hpp>

#include "exercises/bug_museum/graded.hpp"
#include "exercises/bug_museum/unlock_by_non_owner/scenario.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumUnlockByNonOwner, NobodyJoinsTheHolderAfterABusyTry) {
  const NonOwnerUnlockRun run = run_non_owner_unlock<graded::StockRoom<>>();
  ASSERT_TRUE(run.holder_was_inside) << "the holder never entered (the experiment did not run)";
  EXPECT_FALSE(run.busy_try_reserved) << "try_reserve on a busy room must fail";
  EXPECT_EQ(run.max_inside, 1) << "BUG SHOWN: " << run.max_inside << " threads inside the critical section at once";
  EXPECT_EQ(run.items_left, 8) << "BUG SHOWN: two reservations of 10 items left " << run.items_left;
  std::printf("observed: %d threads inside the critical section at once; 2 reservations of 10 items left %d\n",
              run.max_inside, run.items_left);
}

}  // namespace
}  // namespace locklab::museum
