// AdvisoryLock (postgres/advisory_lock.hpp): the shared lock outcome
// contract (pg_lock_outcomes.hpp), then what is its own: the timed wait's
// lock_timeout is sent only when it changes, and the server really holds
// the advisory lock (pg_locks shows it) while the object says so.
#include "postgres/advisory_lock.hpp"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/postgres/pg_lock_outcomes.hpp"

namespace locklab::pg::testing {
namespace {

using AdvisoryLocks = ::testing::Types<AdvisoryLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(Pg, PgLockOutcomes, AdvisoryLocks);

class AdvisoryLockTest : public PostgresTest {};

TEST_F(AdvisoryLockTest, TheServerShowsTheHoldInPgLocksOnlyWhileHeld) {
  AdvisoryLock lock(server().connection_options(), 42);
  auto held_by_server = [&] {
    return db().exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = 42")
               .int64(0, 0);
  };
  EXPECT_EQ(held_by_server(), 0);
  {
    std::lock_guard guard(lock);
    EXPECT_TRUE(lock.is_held_by_current_thread());
    EXPECT_EQ(held_by_server(), 1);
  }
  EXPECT_EQ(held_by_server(), 0);
}

TEST_F(AdvisoryLockTest, ATimedWaitSendsItsLockTimeoutInTheSameRoundTripAndOnlyWhenItChanges) {
  AdvisoryLock lock(server().connection_options(), 43);
  ASSERT_TRUE(lock.try_lock_for(std::chrono::seconds(1)));  // SET lock_timeout = 1000; SELECT pg_advisory_lock
  lock.unlock();
  auto before = lock.round_trips();
  ASSERT_TRUE(lock.try_lock_for(std::chrono::seconds(1)));
  lock.unlock();
  EXPECT_EQ(lock.round_trips() - before, 2u);
  EXPECT_EQ(lock.session().exec("SHOW lock_timeout").text(0, 0), "1s");
  lock.lock();  // back to no limit, still one round trip
  EXPECT_EQ(lock.session().exec("SHOW lock_timeout").text(0, 0), "0");
  lock.unlock();
}

}  // namespace
}  // namespace locklab::pg::testing
