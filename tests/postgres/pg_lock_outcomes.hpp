// pg_lock_outcomes.hpp — the lock outcome contract of the Redis locks
// (tests/distributed/redis_lock_outcomes.hpp, the table in
// distributed/README.md#outcomes-when-a-reply-or-a-lease-is-lost) held by
// PostgreSQL's own locks, AdvisoryLock and RowLock, so that they are peers
// behind the same seam and not just on the same plot. One typed suite; each
// row of the Redis contract has its PostgreSQL counterpart:
//   Redis                                    PostgreSQL (session = lease)
//   unlock() by a non-holder:                the same error, nothing sent
//     operation_not_permitted, nothing sent
//   relock by the holder:                    the same error, nothing sent
//     resource_deadlock_would_occur
//   the lease ran out while held:            the session ended while held
//     unlock() throws LockLost                 (pg_terminate_backend): unlock()
//                                              throws SessionLost, a LockLost, and
//                                              the lock was free for others at once
//   an acquire whose reply was lost          a waiter whose session died in the
//     leaves no hold behind                    wait: pg::Error, and no hold behind
//   exclusion of a non-atomic                the same, on a PostgreSQL row
//     read-modify-write                        (every thread is a session of its
//                                              own, as a process would be)
// plus what the seam needs of any lock: try_lock does not wait, a timed try
// returns false no earlier than asked, a waiter is woken by the release, an
// uncontended lock() + unlock() is 2 round trips, a server refusing the
// login is a typed error. Instantiated in advisory_lock_test.cpp and
// row_lock_test.cpp (a lock joins with PgLockOutcomeTraits<L>::make).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/lock_lost.hpp"
#include "postgres/connection.hpp"
#include "postgres/session_lost.hpp"
#include "tests/postgres/postgres_test_support.hpp"

namespace locklab::pg::testing {

using namespace std::chrono_literals;

template <class L>
struct PgLockOutcomeTraits {
  static std::unique_ptr<L> make(const Connection::Options& o, std::int64_t id) { return std::make_unique<L>(o, id); }
};

template <class F>
void expect_errc(F&& f, std::errc code, const char* what) {
  try {
    f();
    ADD_FAILURE() << what;
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
  }
}

// Polls `ok` every 10 ms until it holds or `limit` passes.
template <class F>
bool eventually(F&& ok, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return ok();
}

template <class L>
class PgLockOutcomes : public PostgresTest {
 protected:
  // A lock id unique within the test binary (both locks' namespaces are
  // per database, and the server is shared by the suite's tests).
  std::unique_ptr<L> make() {
    static std::atomic<std::int64_t> next{1000};
    last_id_ = next.fetch_add(1);
    return PgLockOutcomeTraits<L>::make(server().connection_options(), last_id_);
  }
  std::int64_t last_id_ = 0;
  // Ends the session of backend `pid`, as an administrator or a server
  // restart would; returns once the server said it signalled it.
  void terminate(int pid) {
    ASSERT_EQ(db().exec("SELECT pg_terminate_backend($1)", {pid}).text(0, 0), "t");
  }
  // Another thread's one attempt.
  bool other_thread_takes_it(L& lock) {
    bool got = false;
    std::thread([&] {
      got = lock.try_lock();
      if (got) lock.unlock();
    }).join();
    return got;
  }
};

TYPED_TEST_SUITE_P(PgLockOutcomes);

TYPED_TEST_P(PgLockOutcomes, UnlockByANonHolderIsOperationNotPermittedAndSendsNothing) {
  auto lock = this->make();
  expect_errc([&] { lock->unlock(); }, std::errc::operation_not_permitted, "unlock of a free lock returned");
  lock->lock();
  std::thread([&] {
    const auto before = lock->round_trips();
    expect_errc([&] { lock->unlock(); }, std::errc::operation_not_permitted, "another thread unlocked it");
    EXPECT_EQ(lock->round_trips(), before) << "a refused unlock sent a statement";
  }).join();
  EXPECT_TRUE(lock->is_held_by_current_thread());
  EXPECT_FALSE(this->other_thread_takes_it(*lock)) << "the refused unlock released it";
  lock->unlock();
  EXPECT_TRUE(this->other_thread_takes_it(*lock));
}

TYPED_TEST_P(PgLockOutcomes, RelockingByTheHolderIsResourceDeadlockWouldOccurAndSendsNothing) {
  auto lock = this->make();
  lock->lock();
  const auto before = lock->round_trips();
  expect_errc([&] { (void)lock->try_lock_for(10ms); }, std::errc::resource_deadlock_would_occur,
              "a relock by the holder returned");
  expect_errc([&] { (void)lock->try_lock(); }, std::errc::resource_deadlock_would_occur,
              "a try_lock by the holder returned");
  EXPECT_EQ(lock->round_trips(), before);
  lock->unlock();  // one unlock frees it: the refused relocks took nothing
  EXPECT_TRUE(this->other_thread_takes_it(*lock));
}

TYPED_TEST_P(PgLockOutcomes, AnUncontendedLockAndUnlockIsTwoRoundTrips) {
  auto lock = this->make();
  lock->lock();  // the first call of a thread may set session state
  lock->unlock();
  const auto before = lock->round_trips();
  lock->lock();
  lock->unlock();
  EXPECT_EQ(lock->round_trips() - before, 2u);
}

TYPED_TEST_P(PgLockOutcomes, TryLockDoesNotWaitAndATimedTryGivesUpNoEarlierThanAsked) {
  auto lock = this->make();
  lock->lock();
  std::thread([&] {
    EXPECT_FALSE(lock->try_lock());
    EXPECT_FALSE(lock->try_lock_for(0ms));
    EXPECT_FALSE(lock->try_lock_for(-5ms));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(lock->try_lock_for(80ms));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 80ms);  // a bound the server's lock_timeout guarantees
    EXPECT_FALSE(lock->is_held_by_current_thread());
  }).join();
  lock->unlock();
  EXPECT_TRUE(this->other_thread_takes_it(*lock));
}

TYPED_TEST_P(PgLockOutcomes, AWaiterIsWokenByTheReleaseAndAfterATimedOutWaitStillWaitsWithoutLimit) {
  auto lock = this->make();
  std::atomic<bool> released{false};
  lock->lock();
  std::thread waiter([&] {
    EXPECT_FALSE(lock->try_lock_for(20ms));  // leaves a lock_timeout behind in AdvisoryLock's session...
    lock->lock();                            // ...which lock() must not inherit
    EXPECT_TRUE(released.load()) << "acquired while the holder held it";
    lock->unlock();
  });
  std::this_thread::sleep_for(200ms);
  released = true;
  lock->unlock();
  waiter.join();
}

TYPED_TEST_P(PgLockOutcomes, TheSessionEndingWhileHeldIsLockLostAndFreesTheLockAtOnce) {
  auto lock = this->make();
  lock->lock();
  this->terminate(lock->session().backend_pid());
  // The server released it with the session: another owner gets it now,
  // not after any lease.
  EXPECT_TRUE(eventually([&] { return this->other_thread_takes_it(*lock); }, 5s));
  try {
    lock->unlock();
    FAIL() << "unlock after the session ended returned normally";
  } catch (const redis::LockLost& e) {
    EXPECT_FALSE(e.taken_by_other());
    EXPECT_EQ(e.lock_name(), lock->name());
    EXPECT_NE(std::string(e.what()).find("session"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(lock->is_held_by_current_thread());
  lock->lock();  // a new session, and a normal hold
  EXPECT_FALSE(this->other_thread_takes_it(*lock));
  lock->unlock();
}

TYPED_TEST_P(PgLockOutcomes, AWaiterWhoseSessionDiedInTheWaitGetsATypedErrorAndLeavesNoHoldBehind) {
  auto lock = this->make();
  lock->lock();
  std::atomic<int> waiter_pid{0};
  std::atomic<bool> failed{false};
  std::thread waiter([&] {
    waiter_pid = lock->session().backend_pid();
    try {
      lock->lock();
      lock->unlock();
    } catch (const Error& e) {
      failed = true;
      EXPECT_FALSE(lock->is_held_by_current_thread()) << e.what();
    }
  });
  // Wait until the waiter is queued in the server, then end its session.
  ASSERT_TRUE(eventually(
      [&] {
        return waiter_pid != 0 &&
               this->db().exec("SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted", {waiter_pid.load()})
                       .int64(0, 0) == 1;
      },
      5s));
  this->terminate(waiter_pid);
  lock->unlock();
  waiter.join();
  EXPECT_TRUE(failed.load()) << "the waiter's lock() returned although its session was terminated";
  // Nobody holds it: the dead waiter's session took nothing with it.
  EXPECT_TRUE(this->other_thread_takes_it(*lock));
}

TYPED_TEST_P(PgLockOutcomes, ExcludesThreadsDoingANonAtomicReadModifyWriteOfARow) {
  const std::string t = this->table("counter");
  this->db().exec("CREATE TABLE " + t + " (id int PRIMARY KEY, v bigint NOT NULL)");
  this->db().exec("INSERT INTO " + t + " VALUES (1, 0)");
  auto lock = this->make();
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      Connection own(this->server().connection_options());  // autocommit, outside the lock's session
      for (int k = 0; k < 25; ++k) {
        lock->lock();
        const std::int64_t v = own.exec("SELECT v FROM " + t + " WHERE id = 1").int64(0, 0);
        std::this_thread::yield();  // widen the window a missing exclusion would lose updates in
        own.exec("UPDATE " + t + " SET v = $1 WHERE id = 1", {static_cast<long long>(v + 1)});
        lock->unlock();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(this->db().exec("SELECT v FROM " + t + " WHERE id = 1").int64(0, 0), 200);
}

TYPED_TEST_P(PgLockOutcomes, AWrongPasswordIsATypedErrorFromTheFirstCallAndHoldsNothing) {
  const auto bad = Connection::Options::from_url(this->server().url_for("locklab", "not-the-password"));
  auto good = this->make();
  // AdvisoryLock connects on a thread's first call, RowLock in its
  // constructor: either way the first thing that talks to the server throws.
  expect_error(
      [&] {
        auto refused = PgLockOutcomeTraits<TypeParam>::make(bad, this->last_id_);
        refused->lock();
      },
      Error::Kind::kAuth, {"authentication failed"}, {"not-the-password"});
  EXPECT_TRUE(this->other_thread_takes_it(*good));
}

REGISTER_TYPED_TEST_SUITE_P(PgLockOutcomes, UnlockByANonHolderIsOperationNotPermittedAndSendsNothing,
                            RelockingByTheHolderIsResourceDeadlockWouldOccurAndSendsNothing,
                            AnUncontendedLockAndUnlockIsTwoRoundTrips,
                            TryLockDoesNotWaitAndATimedTryGivesUpNoEarlierThanAsked,
                            AWaiterIsWokenByTheReleaseAndAfterATimedOutWaitStillWaitsWithoutLimit,
                            TheSessionEndingWhileHeldIsLockLostAndFreesTheLockAtOnce,
                            AWaiterWhoseSessionDiedInTheWaitGetsATypedErrorAndLeavesNoHoldBehind,
                            ExcludesThreadsDoingANonAtomicReadModifyWriteOfARow,
                            AWrongPasswordIsATypedErrorFromTheFirstCallAndHoldsNothing);

}  // namespace locklab::pg::testing
