// row_lock.hpp — a row lock as a mutex: SELECT ... FOR UPDATE on one row of
// locklab_row_locks, held for the length of a transaction, behind the same
// Lockable surface as the Redis locks. The other peer the database already
// has: the lock most applications take without calling it one.
//
// The protocol
// ------------
//   lock()            BEGIN; SET LOCAL lock_timeout = 0;
//                     SELECT id FROM locklab_row_locks WHERE id = <id> FOR UPDATE
//                                                          one round trip
//   try_lock()        the same with FOR UPDATE NOWAIT       one round trip,
//                                                          two when refused (ROLLBACK)
//   try_lock_for(d)   SET LOCAL lock_timeout = <d in ms, rounded up>
//                                                          one round trip,
//                                                          two when it times out
//   unlock()          COMMIT                               one round trip
// The three statements of an acquire travel as one simple query, so an
// uncontended lock() + unlock() is 2 round trips, like the Redis locks and
// AdvisoryLock. A waiter sleeps in the server: the first in line on the
// holder's transaction, the others in the queue of the row's tuple lock
// behind it, so a release wakes the next in line (and it the one after,
// as it takes the row), a queue and not a herd, as AdvisoryLock's waiters
// are; SET LOCAL dies with the transaction, so unlike
// AdvisoryLock no session state is tracked. The price over the advisory
// lock is a transaction and a row version check per acquisition, and a
// transaction open for as long as the lock is held (which holds back
// VACUUM's horizon on a busy server: keep sections short).
//
// Why use it
// ----------
// The section's own statements can run in the lock's transaction
// (session() is the holder's connection): they commit with unlock(), or are
// rolled back if the session dies first, so a holder that loses its lock
// never half-writes. That is what no Redis lock can give: the lock and the
// data share one fate.
//
// The row
// -------
// The constructor connects the calling thread's session and creates the
// table (CREATE TABLE IF NOT EXISTS) and the row (INSERT ... ON CONFLICT DO
// NOTHING): 2 round trips (3 the first time), pg::Error on failure. Build the first RowLock
// of a database from one thread (two concurrent CREATE TABLE IF NOT EXISTS
// can collide in PostgreSQL's catalog). An acquire that finds the row gone
// (someone deleted it) locks nothing: pg::Error(kProtocol), nothing held.
//
// Outcomes: as AdvisoryLock's (advisory_lock.hpp), with one difference
// when the session ends while held: SessionLost from unlock(), and the
// section's writes made through session() were rolled back with the
// transaction. A COMMIT after a statement of the section failed ends the
// transaction (PostgreSQL rolls it back) and releases the lock normally:
// the failing statement already threw.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "distributed/deadline_lockable.hpp"
#include "postgres/connection.hpp"
#include "postgres/thread_sessions.hpp"

namespace locklab::pg {

class RowLock : public redis::DeadlineLockable<RowLock> {
 public:
  static constexpr const char* kTable = "locklab_row_locks";

  // Connects the calling thread's session and makes sure the row `id`
  // exists (see "The row").
  RowLock(Connection::Options connection, std::int64_t id);
  RowLock(const RowLock&) = delete;
  RowLock& operator=(const RowLock&) = delete;

  // Commits the lock's transaction. See the outcomes.
  void unlock();
  bool is_held_by_current_thread();

  void open_sessions(int n) { sessions_.open(n); }
  // The calling thread's connection: inside lock() ... unlock(), its
  // statements are part of the lock's transaction.
  Connection& session() { return *sessions_.mine().connection; }
  std::uint64_t round_trips() const noexcept { return sessions_.round_trips(); }
  std::int64_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }

 private:
  friend redis::DeadlineLockable<RowLock>;
  bool acquire_until(std::chrono::steady_clock::time_point deadline);
  void roll_back(ThreadSessions::Session& s) noexcept;

  ThreadSessions sessions_;
  std::int64_t id_;
  std::string name_;
};

}  // namespace locklab::pg
