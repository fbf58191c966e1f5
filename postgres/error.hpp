// error.hpp — the one exception type of the PostgreSQL layer: what went
// wrong starting or talking to PostgreSQL, typed, with a message that names
// the server (never its password).
//
//   kind          when                                         message says
//   kUrl          the connection URL is malformed: not         PostgreSQL URL '<redacted>': <why>
//                 postgresql:// or postgres://, no host, a
//                 port that is not a number (libpq's parser)
//   kConnect      nothing answers at host:port, or the         cannot connect to host:port: <libpq's why>
//                 server refused the connection (not
//                 accepting connections, too many clients)
//   kAuth         the server refused the credentials           authentication failed at host:port: <why>
//                 (wrong password, unknown role, no password
//                 supplied where one is required)
//   kQuery        the server answered a statement with an      host:port refused the statement: <message>
//                 error (syntax, constraint, a lock or          (sqlstate() holds the five-character
//                 statement timeout, serialization failure)     SQLSTATE, e.g. 23505, 55P03, 57014)
//   kIo           the connection broke mid-statement           connection to host:port lost: <why>
//                 (server stopped or killed)
//   kProtocol     a reply of a shape the caller did not        unexpected reply from host:port: <what>
//                 expect (no row where one was required, a
//                 value that is not an integer)
//   kNotInstalled the server binaries (initdb, postgres) are   PostgreSQL server binaries not found ...
//                 missing (EmbeddedPostgres)                   (and how to install them)
//   kStart        an EmbeddedPostgres did not come up:         EmbeddedPostgres: <step> failed: <log tail>
//                 initdb failed, the server exited or did not
//                 answer within its start timeout
//
// What a failure leaves behind: after kIo the Connection is unusable
// (every later call fails with kIo too: make a new one); after kQuery it is
// usable, and any transaction it had open is aborted (the server refuses
// everything but ROLLBACK until then, as PostgreSQL always does).
#pragma once

#include <stdexcept>
#include <string>

namespace locklab::pg {

class Error : public std::runtime_error {
 public:
  enum class Kind { kUrl, kConnect, kAuth, kQuery, kIo, kProtocol, kNotInstalled, kStart };

  Error(Kind kind, const std::string& message, std::string sqlstate = {})
      : std::runtime_error(message), kind_(kind), sqlstate_(std::move(sqlstate)) {}

  Kind kind() const noexcept { return kind_; }
  // The SQLSTATE of a kQuery error ("23505" unique violation, "55P03" lock
  // not available, "57014" statement timeout, "40001" serialization
  // failure); empty for every other kind.
  const std::string& sqlstate() const noexcept { return sqlstate_; }

  // "url", "connect", ... (for messages and test output).
  static const char* kind_name(Kind kind) noexcept {
    switch (kind) {
      case Kind::kUrl: return "url";
      case Kind::kConnect: return "connect";
      case Kind::kAuth: return "auth";
      case Kind::kQuery: return "query";
      case Kind::kIo: return "io";
      case Kind::kProtocol: return "protocol";
      case Kind::kNotInstalled: return "not_installed";
      case Kind::kStart: return "start";
    }
    return "unknown";
  }

 private:
  Kind kind_;
  std::string sqlstate_;
};

}  // namespace locklab::pg
