// connection.hpp — one libpq connection to PostgreSQL with typed errors,
// parameterised statements and a round-trip count.
//
// What it guarantees
// ------------------
// - Typed errors (error.hpp): a malformed URL is kUrl before anything is
//   sent; nothing listening is kConnect; a wrong password or unknown role
//   is kAuth; a statement the server refuses is kQuery with its SQLSTATE; a
//   connection that broke is kIo. Never a silent false, never a crash.
// - No password in any message: URLs are shown through redacted_url(), and
//   libpq's own messages name the host and port only.
// - Parameters travel apart from the SQL text (PQexecParams, the extended
//   protocol): a value is never parsed as SQL, whatever it contains.
// - Bounded: the connect gives up after Options::connect_timeout, and every
//   statement after Options::statement_timeout on the server's clock (the
//   server cancels it: kQuery, SQLSTATE 57014). A lock wait inside a
//   statement (SELECT ... FOR UPDATE, pg_advisory_lock) counts towards it.
//
// Server notices and warnings (NOTICE, WARNING) are dropped; errors are
// thrown.
//
// What it is not: thread-safe. A libpq connection carries one statement at
// a time, and its transaction state is the session's, so a Connection
// belongs to one thread at a time; give each thread (each client of a
// benchmark) its own, as each would have its own session in production.
//
// What it costs: exec() is one round trip (round_trips() counts them; a
// string of several statements separated by ';' without parameters is one
// round trip too). The connect is one TCP connect plus the SCRAM exchange
// and a server process forked for the session: ~10 ms on loopback here
// (p50 of 20, load average 6; SCRAM's 4,096 key-derivation rounds on each
// side dominate), so keep connections open; a pool is out of scope.
//
// Where the URL comes from: Options::from_env() reads LOCKLAB_PG_URL
// (postgresql://user:password@host:port/db), with the password replaced by
// LOCKLAB_PG_PASSWORD when that is set. Tests never use it: they start
// their own EmbeddedPostgres (embedded_postgres.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "postgres/error.hpp"

struct pg_conn;
struct pg_result;

namespace locklab::pg {

// One statement parameter: text, or SQL NULL. Integers convert to their
// decimal text (PostgreSQL casts text parameters to the column's type).
struct Param {
  std::optional<std::string> text;

  Param(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): NULL
  Param(std::string s) : text(std::move(s)) {}  // NOLINT
  Param(std::string_view s) : text(std::string(s)) {}  // NOLINT
  Param(const char* s) : text(std::string(s)) {}  // NOLINT
  Param(int v) : text(std::to_string(v)) {}  // NOLINT
  Param(long v) : text(std::to_string(v)) {}  // NOLINT
  Param(long long v) : text(std::to_string(v)) {}  // NOLINT
};

// What one statement returned: rows of text values (libpq's text format).
// Cheap to copy (shared).
class Result {
 public:
  Result() = default;

  int rows() const noexcept;
  int columns() const noexcept;
  // The rows an INSERT / UPDATE / DELETE touched (libpq's PQcmdTuples), 0
  // for a statement that touches none.
  std::int64_t affected() const;
  bool is_null(int row, int column) const;
  // The value as text; nullopt for NULL. Error(kProtocol) outside the
  // result (row or column out of range).
  std::optional<std::string> get(int row, int column) const;
  // The value as text; Error(kProtocol) if NULL or out of range.
  std::string text(int row, int column) const;
  // The value as a 64-bit integer; Error(kProtocol) if NULL, out of range
  // or not an integer.
  std::int64_t int64(int row, int column) const;

 private:
  friend class Connection;
  Result(std::shared_ptr<pg_result> result, std::string endpoint)
      : result_(std::move(result)), endpoint_(std::move(endpoint)) {}
  void check(int row, int column) const;

  std::shared_ptr<pg_result> result_;
  std::string endpoint_;
};

class Connection {
 public:
  struct Options {
    // postgresql://[user[:password]@]host[:port][/database][?param=value...]
    // (postgres:// too). Everything libpq's URI syntax allows, except the
    // key=value form: a URL is what the lab passes around and redacts.
    std::string url;
    // libpq's connect_timeout, whole seconds (libpq treats values under 2
    // as 2: its own floor). A refused connection fails at once.
    std::chrono::seconds connect_timeout{5};
    // The server-side bound on every statement (SET statement_timeout);
    // 0: none. 10 s is two orders of magnitude above anything a test or a
    // benchmark point here runs in one statement.
    std::chrono::milliseconds statement_timeout{10'000};
    std::string application_name = "locklab";

    // Options for `url`, checked with libpq's own parser: Error(kUrl) for a
    // malformed one (the message shows it redacted).
    static Options from_url(std::string url);
    // Options from LOCKLAB_PG_URL (nullopt if unset or empty), the password
    // replaced by LOCKLAB_PG_PASSWORD when that is set. Error(kUrl) if the
    // URL is malformed.
    static std::optional<Options> from_env();
    // `url` with the user and password (everything between the scheme and
    // the last '@') replaced by "***", and the value of any password=
    // query parameter too. Use it wherever a URL is shown.
    static std::string redacted_url(std::string_view url);
  };

  // Connects (see the essay for the errors). Error(kUrl) for a malformed
  // URL, kConnect, kAuth.
  explicit Connection(Options options);
  explicit Connection(const std::string& url) : Connection(Options::from_url(url)) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql` (several statements separated by ';' allowed; the result is
  // the last one's). One round trip. Error(kQuery) if the server refuses a
  // statement, kIo if the connection broke.
  Result exec(std::string_view sql);
  // Runs one statement with $1, $2 ... bound to `params`. One round trip.
  Result exec(std::string_view sql, const std::vector<Param>& params);
  Result exec(std::string_view sql, std::initializer_list<Param> params) {
    return exec(sql, std::vector<Param>(params));
  }

  // Statements sent on this connection (each exec() is one round trip).
  std::uint64_t round_trips() const noexcept { return round_trips_; }
  // The server process serving this session (pg_backend_pid()), as libpq
  // learnt it at connect time: the id pg_locks and pg_stat_activity show.
  int backend_pid() const noexcept;
  // "host:port" for messages ("local socket" when the URL names no host).
  const std::string& endpoint() const noexcept { return endpoint_; }

 private:
  [[noreturn]] void fail(pg_result* result, const char* what);

  Options options_;
  std::string endpoint_;
  pg_conn* conn_ = nullptr;
  std::uint64_t round_trips_ = 0;
};

}  // namespace locklab::pg
