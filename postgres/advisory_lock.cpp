#include "postgres/advisory_lock.hpp"

#include "postgres/session_lock_support.hpp"
#include "postgres/session_lost.hpp"

namespace locklab::pg {

// The key and the timeout are integers we format ourselves: no caller text
// ever reaches the SQL, and the simple query protocol (one round trip for a
// SET and a SELECT) takes no parameters.
bool AdvisoryLock::acquire_until(detail::Clock::time_point deadline) {
  ThreadSessions::Session& s = sessions_.mine();
  if (s.held) detail::throw_relock(name_);
  const auto now = detail::Clock::now();
  const std::string key = std::to_string(key_);
  if (deadline <= now) {
    // One attempt: pg_try_advisory_lock never waits.
    const bool got = sessions_.exec(s, "SELECT pg_try_advisory_lock(" + key + ")").text(0, 0) == "t";
    s.held = got;
    return got;
  }
  const std::int64_t timeout = detail::lock_timeout_ms(deadline, now);
  std::string sql;
  if (s.lock_timeout_ms != timeout) sql = "SET lock_timeout = " + std::to_string(timeout) + "; ";
  sql += "SELECT pg_advisory_lock(" + key + ")";
  try {
    sessions_.exec(s, sql);
  } catch (const Error& e) {
    // 55P03: lock_timeout ran out. The two statements were one implicit
    // transaction, so the SET was rolled back with it: the session's
    // lock_timeout is what it was before.
    if (e.kind() == Error::Kind::kQuery && e.sqlstate() == "55P03") return false;
    throw;  // kIo: the session was closed, so it holds nothing
  }
  s.lock_timeout_ms = timeout;
  s.held = true;
  return true;
}

void AdvisoryLock::unlock() {
  ThreadSessions::Session* s = sessions_.mine_if_any();
  if (s == nullptr || !s->held) detail::throw_not_held(name_);
  bool released = false;
  try {
    released = sessions_.exec(*s, "SELECT pg_advisory_unlock(" + std::to_string(key_) + ")").text(0, 0) == "t";
  } catch (const Error& e) {
    if (detail::session_ended(e)) throw SessionLost(name_, "the session ended (" + std::string(e.what()) + ")");
    throw;  // refused (kQuery): still held, as far as we know
  }
  s->held = false;
  if (!released) throw SessionLost(name_, "PostgreSQL says this session does not hold it");
}

bool AdvisoryLock::is_held_by_current_thread() {
  ThreadSessions::Session* s = sessions_.mine_if_any();
  return s != nullptr && s->held;
}

}  // namespace locklab::pg
