// lease_without_fencing_fixed_test.cpp — the exhibit's scenario with fencing
// tokens: A's stale write is rejected, A retries, no update is lost.
#include <gtest/gtest.h>

#include "exercises/instructor/bug_museum/lease_without_fencing/lease_lock.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumLeaseWithoutFencingFixed, TheStaleWriteIsRejectedAndNoUpdateIsLost) {
  ManualClock clock;
  fixed::LeaseLock lock(clock, 10'000);
  fixed::Account account(100);

  const auto a_token = lock.try_acquire("A");
  ASSERT_TRUE(a_token);
  const std::int64_t a_read = account.read();
  clock.advance(15'000);  // A's pause

  const auto b_token = lock.try_acquire("B");
  ASSERT_TRUE(b_token);
  EXPECT_GT(*b_token, *a_token) << "tokens must increase with every grant";
  EXPECT_TRUE(account.write(account.read() + 50, *b_token));
  lock.release("B");

  EXPECT_FALSE(account.write(a_read - 30, *a_token)) << "A's stale write must be rejected";
  EXPECT_EQ(account.read(), 150) << "B's deposit survives";
  // A learns it lost the lock, and does its withdrawal again, properly.
  const auto a_again = lock.try_acquire("A");
  ASSERT_TRUE(a_again);
  EXPECT_TRUE(account.write(account.read() - 30, *a_again));
  lock.release("A");
  EXPECT_EQ(account.read(), 100 - 30 + 50);
  EXPECT_EQ(account.rejected(), 1);
}

}  // namespace
}  // namespace locklab::museum
