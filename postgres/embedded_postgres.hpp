// embedded_postgres.hpp — a private PostgreSQL server for tests, benchmarks
// and scenarios: a fresh cluster (initdb) in a temporary directory,
// listening on 127.0.0.1 at a free port and on a unix socket in that
// directory, without durability, stopped and removed on destruction. The
// PostgreSQL side of redis::EmbeddedServer (distributed/embedded_server.hpp).
//
// What it guarantees
// ------------------
// - Isolation: `initdb` into a fresh mkdtemp() directory under $TMPDIR
//   (default /tmp); the server listens on 127.0.0.1 only, on a port the
//   kernel reported free, and on a socket in that directory. A system
//   PostgreSQL on 5432 is never touched.
// - No durability, on purpose: fsync=off, synchronous_commit=off,
//   full_page_writes=off (and initdb --no-sync). A crash of the machine
//   loses the cluster, which is thrown away anyway; what remains is
//   PostgreSQL's own locking and MVCC, which is what the lab measures.
// - Authentication as in production: the superuser `locklab` has a random
//   password (128 bits from std::random_device) and TCP connections must
//   give it (scram-sha-256 in pg_hba.conf), so a wrong password is refused
//   (Error kAuth) here as it would be on a real server. The unix socket
//   trusts local users (initdb's --auth-local=trust).
// - Root: PostgreSQL refuses to run as root. When this process is root (CI
//   containers are), initdb and the server run as the system user
//   `postgres` (Debian's package creates it), else `nobody`, with the
//   temporary directory handed to that user (chown); the child drops its
//   groups, gid and uid before exec. Not root: they run as this user.
// - Ready means ready, and ours: the constructor returns only after a
//   connection answered and `SHOW data_directory` named our directory. If
//   the server exits at start (its port taken between our probe and its
//   bind) it retries on another port, up to 5 times; a server on the port
//   that is not ours is never adopted.
// - Cleanup: stop() is PostgreSQL's immediate shutdown (SIGQUIT: the
//   postmaster tells every backend to quit, nothing is flushed; the
//   directory is deleted anyway), up to 5 s, then SIGKILL. The destructor
//   stops and removes the directory. As with EmbeddedServer, the postmaster
//   asks the kernel to SIGKILL it when the thread that started it dies
//   (PR_SET_PDEATHSIG): create servers from a thread that outlives them.
//   Backends put themselves in sessions of their own (setsid), so no
//   signal to a group reaches them; they watch the postmaster through a
//   pipe and exit when it is gone.
//
// What it costs (2-core lab machine): initdb, start and stop ~0.45 s idle
// (1-1.5 s at load average 6); ~18 MB of memory idle (PSS of the server's
// 6 processes; shared_buffers is cut from 128 MB to 16 MB: the lab's tables
// are a few rows), and each connection is a server process of its own
// (~1.3 MB PSS each, measured with 20 open).
//
// Where the binaries come from: $LOCKLAB_PG_BINDIR if set, else the
// highest-numbered /usr/lib/postgresql/<version>/bin holding initdb and
// postgres (Debian's layout: `pg_config --bindir` belongs to libpq-dev and
// may not match the server), else `initdb` on $PATH. Not found:
// Error(kNotInstalled) saying how to install them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "postgres/connection.hpp"
#include "postgres/error.hpp"

namespace locklab::pg {

class EmbeddedPostgres {
 public:
  struct Options {
    std::string bindir;                               // empty: see find_bindir()
    std::chrono::milliseconds start_timeout{20'000};  // initdb, then until a connection answers
    // The server's max_connections. 128 covers the lab's largest fan-out
    // (64 waiters, each with its own session, plus the scenario's probes).
    int max_connections = 128;
    std::vector<std::string> settings;  // extra "name=value" server settings (postgres -c)
  };

  // initdb, start, wait until ready (see the essay). Error(kNotInstalled)
  // if the binaries are missing, Error(kStart) if initdb fails or the
  // server does not come up within start_timeout (the message quotes its
  // log).
  EmbeddedPostgres();
  explicit EmbeddedPostgres(Options options);
  // stop(), then removes the directory. Never throws.
  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // The directory holding initdb and postgres (see the essay), or
  // Error(kNotInstalled).
  static std::string find_bindir();

  const std::string& host() const noexcept { return host_; }
  int port() const noexcept { return port_; }
  const std::string& user() const noexcept { return user_; }
  const std::string& password() const noexcept { return password_; }
  const std::string& database() const noexcept { return database_; }
  // postgresql://locklab:<password>@127.0.0.1:<port>/postgres
  std::string url() const { return url_for(user_, password_); }
  // The same server as another user and password (for the auth tests).
  std::string url_for(const std::string& user, const std::string& password) const;
  // Connection options for url() (other fields at their defaults).
  Connection::Options connection_options() const { return Connection::Options::from_url(url()); }

  // The server's (postmaster's) process id while running, else -1.
  pid_t pid() const noexcept { return pid_; }
  bool running() const noexcept { return pid_ > 0; }
  // The temporary directory: data/ (the cluster), the socket, the logs.
  const std::string& directory() const noexcept { return dir_; }
  // The user initdb and the server run as ("" when this process's own).
  const std::string& run_as() const noexcept { return run_as_; }

  // Immediate shutdown (see the essay). Idempotent; never throws. Every
  // open connection then fails with Error(kIo).
  void stop() noexcept;

  // The last lines of the server's log (for error messages).
  std::string log_tail(std::size_t max_bytes = 2'000) const;

 private:
  pid_t spawn(const std::vector<std::string>& args, const std::string& log) const;
  bool launch(int port, std::string& why);

  Options options_;
  std::string bindir_;
  std::string host_ = "127.0.0.1";
  std::string user_ = "locklab";
  std::string password_;
  std::string database_ = "postgres";
  std::string dir_;
  std::string run_as_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool drop_privileges_ = false;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The server a benchmark or a scenario talks to: the one LOCKLAB_PG_URL
// names (never started or stopped by us, but written to: the scenarios
// create and drop their own tables, so point it at a scratch database),
// else a fresh EmbeddedPostgres owned by this object. Tests never use it:
// they start their own.
class ServerFromEnvOrEmbedded {
 public:
  // Error(kUrl) for a malformed LOCKLAB_PG_URL; EmbeddedPostgres's errors.
  ServerFromEnvOrEmbedded();
  const Connection::Options& options() const noexcept { return options_; }
  // The embedded server, nullptr when LOCKLAB_PG_URL chose another.
  EmbeddedPostgres* embedded() noexcept { return server_.get(); }
  // "embedded" or the URL redacted, for result files and messages.
  std::string describe() const;

 private:
  std::unique_ptr<EmbeddedPostgres> server_;
  Connection::Options options_;
};

}  // namespace locklab::pg
