// advisory_lock.hpp — PostgreSQL's session-level advisory lock
// (pg_advisory_lock / pg_try_advisory_lock on a bigint key) behind the same
// Lockable surface as the Redis locks: a peer on their curves, and the
// answer to "we already have a database; why add Redis for a lock?".
//
// The protocol
// ------------
//   lock()            SELECT pg_advisory_lock(key)          one round trip
//   try_lock()        SELECT pg_try_advisory_lock(key)      one round trip
//   try_lock_for(d)   SET lock_timeout = <d in ms, rounded up>;
//                     SELECT pg_advisory_lock(key)          one round trip
//                     (both statements in one simple query; the SET is sent
//                     only when the session's lock_timeout differs)
//   unlock()          SELECT pg_advisory_unlock(key)        one round trip
// So an uncontended lock() + unlock() is 2 round trips, as for the Redis
// locks, and a contended one is still 2: the waiting happens inside the
// server. Why a timed wait is lock_timeout rather than try + sleep: the
// server keeps a queue of the sessions waiting for a lock and wakes the
// next one when the holder releases (one wake-up, no polling, first come
// first served: a newcomer that conflicts with a queued waiter queues behind
// it), and lock_timeout bounds exactly that wait (SQLSTATE 55P03:
// try_lock_for returns false, no earlier than asked: the timeout counts
// from the start of the wait and is rounded up to whole ms). A try + sleep
// loop would be SpinLock's polling, with its wasted round trips and its
// hand-off of half an interval.
//
// Ownership
// ---------
// The owner is the session, so every calling thread gets a session of its
// own (thread_sessions.hpp): 64 waiters are 64 connections and 64 server
// processes. PostgreSQL's advisory locks are reentrant per session (a count);
// this class is not, like the Redis locks it is compared with: a relock by
// the holder is refused before anything is sent.
//
// Outcomes (the shared contract, tests/postgres/pg_lock_outcomes.hpp)
// --------------------------------------------------------------------
//   unlock() by a thread that holds nothing   std::system_error(operation_not_permitted), nothing sent
//   lock() by the holder                       std::system_error(resource_deadlock_would_occur), nothing sent
//   the session ended while held (connection   SessionLost (a redis::LockLost) from unlock(): the server
//   lost, backend terminated, server restart)  released the lock when the session ended; writes the
//                                              section made are NOT undone (they went elsewhere)
//   pg_advisory_unlock answers false (the      SessionLost: the lock was not held by this session
//   session no longer holds it)
//   an acquire that fails with kIo (its reply  that pg::Error(kIo); the session is closed, and a
//   was lost: the server may have granted it)  closed session holds nothing, so no restore is needed
//   an acquire the server refuses (kQuery:     that pg::Error; the thread holds nothing
//   statement_timeout 57014, ...)
//   cannot connect / wrong password            pg::Error(kConnect / kAuth) from the first call of a thread
// lock() has no deadline of its own, but every statement is bounded by the
// session's statement_timeout (Connection::Options, 10 s by default, 0 for
// none): a lock() that waits longer throws pg::Error(kQuery, 57014) and
// holds nothing.
//
// A dead waiter: a client that vanishes while waiting stays in the server's
// queue until its backend notices (when it is granted the lock and tries to
// answer, or at the server's client_connection_check_interval), and then
// releases at once. A dead holder holds until the server notices its
// connection is gone: TCP keepalives, or never on a silent network cut.
// That is the lease this lock does not have, and why fencing (the resource
// refusing a stale token) matters here too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "distributed/deadline_lockable.hpp"
#include "postgres/connection.hpp"
#include "postgres/thread_sessions.hpp"

namespace locklab::pg {

class AdvisoryLock : public redis::DeadlineLockable<AdvisoryLock> {
 public:
  // Sends nothing: each thread connects with `connection` on its first call.
  AdvisoryLock(Connection::Options connection, std::int64_t key)
      : sessions_(std::move(connection)), key_(key), name_("advisory:" + std::to_string(key)) {}
  AdvisoryLock(const AdvisoryLock&) = delete;
  AdvisoryLock& operator=(const AdvisoryLock&) = delete;

  // Releases the lock. See the outcomes above.
  void unlock();
  bool is_held_by_current_thread();

  // Connects n sessions now for threads that have none yet (a benchmark's
  // waiters, so that their connects fall outside the measurement).
  void open_sessions(int n) { sessions_.open(n); }
  // The calling thread's connection (connecting if needed): the critical
  // section's own statements may use it.
  Connection& session() { return *sessions_.mine().connection; }
  // Statements sent by this object, all threads together.
  std::uint64_t round_trips() const noexcept { return sessions_.round_trips(); }
  std::int64_t key() const noexcept { return key_; }
  const std::string& name() const noexcept { return name_; }

 private:
  friend redis::DeadlineLockable<AdvisoryLock>;
  bool acquire_until(std::chrono::steady_clock::time_point deadline);

  ThreadSessions sessions_;
  std::int64_t key_;
  std::string name_;
};

}  // namespace locklab::pg
