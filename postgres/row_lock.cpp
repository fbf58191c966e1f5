#include "postgres/row_lock.hpp"

#include "postgres/session_lock_support.hpp"
#include "postgres/session_lost.hpp"

namespace locklab::pg {

RowLock::RowLock(Connection::Options connection, std::int64_t id)
    : sessions_(std::move(connection)), id_(id), name_(std::string(kTable) + ":" + std::to_string(id)) {
  ThreadSessions::Session& s = sessions_.mine();
  // Asked first, so that an existing table costs no NOTICE ("already
  // exists, skipping") on the client's stderr.
  if (sessions_.exec(s, std::string("SELECT to_regclass('") + kTable + "') IS NULL").text(0, 0) == "t") {
    sessions_.exec(s, std::string("CREATE TABLE IF NOT EXISTS ") + kTable + " (id bigint PRIMARY KEY)");
  }
  sessions_.exec(s, std::string("INSERT INTO ") + kTable + " (id) VALUES (" + std::to_string(id_) +
                        ") ON CONFLICT DO NOTHING");
}

void RowLock::roll_back(ThreadSessions::Session& s) noexcept {
  try {
    if (s.connection) sessions_.exec(s, "ROLLBACK");
  } catch (const Error&) {
    // A broken session was dropped by exec (the server rolls back itself);
    // a refused ROLLBACK cannot leave a transaction we would reuse either:
    // drop the session to be sure.
    sessions_.drop(s);
  }
}

bool RowLock::acquire_until(detail::Clock::time_point deadline) {
  ThreadSessions::Session& s = sessions_.mine();
  if (s.held) detail::throw_relock(name_);
  const auto now = detail::Clock::now();
  const bool one_try = deadline <= now;
  std::string sql = "BEGIN; ";
  if (!one_try) sql += "SET LOCAL lock_timeout = " + std::to_string(detail::lock_timeout_ms(deadline, now)) + "; ";
  sql += std::string("SELECT id FROM ") + kTable + " WHERE id = " + std::to_string(id_) + " FOR UPDATE" +
         (one_try ? " NOWAIT" : "");
  Result r;
  try {
    r = sessions_.exec(s, sql);
  } catch (const Error& e) {
    if (detail::session_ended(e)) throw;  // the session is gone: nothing held, nothing to roll back
    roll_back(s);                         // the explicit BEGIN left an aborted transaction open
    if (e.kind() == Error::Kind::kQuery && e.sqlstate() == "55P03") return false;  // busy / timed out
    throw;
  }
  if (r.rows() != 1) {
    roll_back(s);
    throw Error(Error::Kind::kProtocol, "row lock '" + name_ + "': the row is gone, so FOR UPDATE locked nothing");
  }
  s.held = true;
  return true;
}

void RowLock::unlock() {
  ThreadSessions::Session* s = sessions_.mine_if_any();
  if (s == nullptr || !s->held) detail::throw_not_held(name_);
  try {
    sessions_.exec(*s, "COMMIT");
  } catch (const Error& e) {
    if (detail::session_ended(e)) {
      throw SessionLost(name_, "the session ended and its transaction was rolled back (" + std::string(e.what()) + ")");
    }
    roll_back(*s);  // a refused COMMIT (a deferred constraint): the transaction is over either way
    s->held = false;
    throw;
  }
  s->held = false;
}

bool RowLock::is_held_by_current_thread() {
  ThreadSessions::Session* s = sessions_.mine_if_any();
  return s != nullptr && s->held;
}

}  // namespace locklab::pg
