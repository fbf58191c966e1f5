// session_lost.hpp — what unlock() of a PostgreSQL lock throws when the
// lock was gone before it: the session that held it ended.
//
// A PostgreSQL lock has no lease; its session is the lease. A session-level
// advisory lock lives until pg_advisory_unlock or the end of the session; a
// row lock until the end of its transaction. When the connection breaks
// (the server restarted, an administrator ran pg_terminate_backend, a
// network cut the TCP connection and the server noticed), the server ends
// the session and releases what it held, exactly as a Redis lease running
// out releases a key, and another client may be inside the critical section
// before the first one notices. So the holder is told the same way: this is
// a redis::LockLost (the benches and scenarios count both as lost leases),
// with a message that says what really happened. taken_by_other() is always
// false: the session that could have asked who holds the lock now is gone.
//
// What was written inside the section differs by lock, and the header of
// each says it: RowLock's writes in the lock's own transaction were rolled
// back with it; writes made elsewhere (AdvisoryLock's section, another
// connection) were not, and may be interleaved with the next holder's.
#pragma once

#include <string>

#include "distributed/lock_lost.hpp"

namespace locklab::pg {

class SessionLost : public redis::LockLost {
 public:
  SessionLost(const std::string& lock_name, const std::string& why)
      : redis::LockLost(lock_name, false),
        message_("lock '" + lock_name + "' was lost before unlock: " + why +
                 "; PostgreSQL released it when the session ended, so the critical section was not protected "
                 "to its end") {}

  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace locklab::pg
