// RowLock (postgres/row_lock.hpp): the shared lock outcome contract
// (pg_lock_outcomes.hpp), then what is its own: the section's writes
// through session() commit with unlock() and are rolled back with a session
// that ends while held; a row that is gone is a typed error, not a lock of
// nothing.
#include "postgres/row_lock.hpp"

#include <gtest/gtest.h>

#include "tests/postgres/pg_lock_outcomes.hpp"

namespace locklab::pg::testing {
namespace {

using RowLocks = ::testing::Types<RowLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(Pg, PgLockOutcomes, RowLocks);

class RowLockTest : public PostgresTest {};

TEST_F(RowLockTest, TheSectionsWritesCommitWithUnlockAndDieWithALostSession) {
  const std::string t = table("writes");
  db().exec("CREATE TABLE " + t + " (v int)");
  RowLock lock(server().connection_options(), 7);
  lock.lock();
  lock.session().exec("INSERT INTO " + t + " VALUES (1)");
  EXPECT_EQ(db().exec("SELECT count(*) FROM " + t).int64(0, 0), 0) << "visible before the unlock committed it";
  lock.unlock();
  EXPECT_EQ(db().exec("SELECT count(*) FROM " + t).int64(0, 0), 1);

  lock.lock();
  lock.session().exec("INSERT INTO " + t + " VALUES (2)");
  ASSERT_EQ(db().exec("SELECT pg_terminate_backend($1)", {lock.session().backend_pid()}).text(0, 0), "t");
  EXPECT_THROW(lock.unlock(), SessionLost);
  EXPECT_EQ(db().exec("SELECT count(*) FROM " + t + " WHERE v = 2").int64(0, 0), 0)
      << "a write of the lost section survived";
}

TEST_F(RowLockTest, ARowThatIsGoneIsAProtocolErrorAndHoldsNothing) {
  RowLock lock(server().connection_options(), 8);
  db().exec(std::string("DELETE FROM ") + RowLock::kTable + " WHERE id = 8");
  expect_error([&] { lock.lock(); }, Error::Kind::kProtocol, {"row is gone"});
  EXPECT_FALSE(lock.is_held_by_current_thread());
  // The failed acquire left no transaction open on the thread's session.
  EXPECT_EQ(lock.session().exec("SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid() AND "
                                "state = 'idle in transaction'")
                .int64(0, 0),
            0);
}

}  // namespace
}  // namespace locklab::pg::testing
