// error.hpp — the one exception type of the Redis client layer: what went
// wrong talking to Redis, typed, with a message that names the server.
//
// Every failure of locklab::redis that is not the caller's fault surfaces as
// a redis::Error with a Kind, never as a crash, a hang or a silent `false`:
//
//   kind        when                                        message says
//   kConnect    TCP connect refused / unreachable / slow     cannot connect to host:port: <why> (after N ms)
//               (also: the server at its maxclients limit:   cannot connect to host:port: the server
//               it answers the first command with "ERR max   refused the connection: ERR max number of
//               number of clients reached" and closes)       clients reached (its maxclients limit)
//   kTimeout    no reply within Options::command_timeout     timed out after N ms waiting for host:port
//               (also: no pooled connection free in time,
//               a subscription not confirmed in time)
//   kIo         the connection broke mid-command (server     connection to host:port lost: <why>
//               killed or restarted, network reset)
//   kServer     the server answered with an error reply      host:port replied: <the server's message>
//               (WRONGTYPE, a failing script, OOM, a
//               refused SUBSCRIBE: NOAUTH, NOPERM ...)
//   kAuth       AUTH / SELECT refused at connect time        authentication failed at host:port: <message>
//   kProtocol   a reply of a shape the caller did not        unexpected reply from host:port (script
//               expect (e.g. a string where a script         <name>): expected <what>, got <reply>
//               returns integers, a counter key holding      (the script part when a script answered)
//               text that is not a number)
//
// Caller mistakes are not redis::Error: a malformed URL or option is
// std::invalid_argument (a URL is shown with its user and password
// replaced by "***"), unlocking a lock this thread does not hold is
// std::system_error(operation_not_permitted), re-locking a non-reentrant
// lock is std::system_error(resource_deadlock_would_occur), a lease
// that ran out under its holder is redis::LockLost (lock_lost.hpp), and
// RedLock::lock() giving up without a quorum is redis::NoQuorum
// (red_lock.hpp: each node's vote).
//
// What a failure leaves behind: a connection that saw kTimeout or kIo is
// closed, never returned to the pool (its reply stream may be out of step);
// the next command opens a fresh one. A kServer error leaves the connection
// in the pool: the exchange completed.
#pragma once

#include <stdexcept>
#include <string>

namespace locklab::redis {

class Error : public std::runtime_error {
 public:
  enum class Kind { kConnect, kTimeout, kIo, kServer, kAuth, kProtocol };

  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  Kind kind() const noexcept { return kind_; }

  // "connect", "timeout", ... (for messages and test output).
  static const char* kind_name(Kind kind) noexcept {
    switch (kind) {
      case Kind::kConnect: return "connect";
      case Kind::kTimeout: return "timeout";
      case Kind::kIo: return "io";
      case Kind::kServer: return "server";
      case Kind::kAuth: return "auth";
      case Kind::kProtocol: return "protocol";
    }
    return "unknown";
  }

 private:
  Kind kind_;
};

}  // namespace locklab::redis
