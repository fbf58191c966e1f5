// unlock_by_non_owner_fixed_test.cpp — the exhibit's experiment on the fix
// (nobody joins the holder; no item lost), and the defence in depth: the
// exhibit's own code on an owner-checking lock fails loudly at the wrong
// unlock instead of corrupting silently.
#include <gtest/gtest.h>

#include <chrono>
#include <system_error>
#include <thread>

#include "exercises/bug_museum/unlock_by_non_owner/scenario.hpp"
#include "exercises/bug_museum/unlock_by_non_owner/stock_room.hpp"
#include "exercises/instructor/bug_museum/unlock_by_non_owner/stock_room.hpp"
#include "primitives/reentrant_lock.hpp"
#include "tests/eventually.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumUnlockByNonOwnerFixed, NobodyJoinsTheHolderAndNoItemIsLost) {
  const NonOwnerUnlockRun run = run_non_owner_unlock<fixed::StockRoom<>>();
  ASSERT_TRUE(run.holder_was_inside);
  EXPECT_FALSE(run.busy_try_reserved);
  EXPECT_EQ(run.max_inside, 1);
  EXPECT_EQ(run.items_left, 8);
}

TEST(MuseumUnlockByNonOwnerFixed, AnOwnerCheckingLockMakesTheBuggyCodeFailLoudly) {
  StockRoom<ReentrantLock> room(10, 200ms);  // the EXHIBIT's code, on ReentrantLock
  std::thread holder([&] { room.reserve(); });
  ASSERT_TRUE(testing::eventually([&] { return room.inside_now() == 1; }));
  EXPECT_THROW(room.try_reserve(), std::system_error) << "the wrong unlock() must be refused";
  holder.join();
  EXPECT_EQ(room.max_inside(), 1);
  EXPECT_EQ(room.items_left(), 9);
}

}  // namespace
}  // namespace locklab::museum
