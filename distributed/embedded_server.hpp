// embedded_server.hpp — a private redis-server for tests and benchmarks:
// started on 127.0.0.1 with a free port, no persistence, in a temporary
// directory, stopped on destruction.
//
// What it guarantees
// ------------------
// - Isolation: the server binds 127.0.0.1 only, on a port the kernel
//   reported free (bind to port 0, read it back), with `--save ""
//   --appendonly no` (nothing written to disk but its log) and its working
//   directory in a fresh mkdtemp() directory under $TMPDIR (default /tmp)
//   that the destructor removes. A system Redis on 6379 is never touched.
// - Ready means ready, and ours: the constructor returns only after the
//   server answered PING and its `INFO server` reported the process_id we
//   spawned; if it exits early (port taken between our probe and its bind:
//   the race every "find a free port" has) it retries on another port, up
//   to 5 times, then throws std::runtime_error quoting the server's log. A
//   server that answers on the port with another process_id (someone
//   else's) is never adopted: it is not flushed, killed or restarted by us.
// - Cleanup: ~EmbeddedServer sends SIGTERM, waits up to 2 s, then SIGKILL,
//   reaps the child and deletes the directory. Since a crashing test never
//   runs destructors, the child also asks the kernel (PR_SET_PDEATHSIG) to
//   SIGKILL it when the thread that started it dies: create servers from a
//   thread that outlives them (main, or a GoogleTest environment).
// - Fault injection for tests: kill() is SIGKILL (a crashed server, nothing
//   flushed), stop() a clean shutdown, restart() starts it again on the SAME
//   port (clients reconnect by themselves), with empty data.
//
// What it costs: one fork+exec and ~10-50 ms until PING answers; ~3 MB of
// memory per server. start_many(n) starts n independent servers (RedLock
// needs 3 or 5).
//
// Where the binary comes from: $LOCKLAB_REDIS_SERVER if set, else
// `redis-server` on $PATH, else /usr/bin/redis-server (Debian's package
// redis-server). Not found: std::runtime_error saying so and how to install.
//
// Elsewhere than loopback, for the partition scenario only: with
// Options::launch_prefix (e.g. {"/usr/sbin/ip", "netns", "exec", ns}) the
// server runs inside a network namespace that the caller made, bound to
// Options::bind (that namespace's addresses; the first is host()). The
// prefix must exec the server in place (`ip netns exec` does), so that
// pid() and the process_id check stay the server's. The port is still
// probed free on this namespace's loopback: a fresh namespace has no
// listener at all. A server bound off loopback refuses every client while
// Redis's protected mode is on (no password): pass {"--protected-mode",
// "no"} in extra_args, and only for a namespace nobody else can reach.
//
// DEBUG commands (DEBUG SLEEP, DEBUG RESTART, DEBUG SEGFAULT ...) are fault
// injectors, refused unless Options::enable_debug_command is set (then
// `enable-debug-command local`, Redis >= 7: local connections only), for a
// test that makes the server slow (DEBUG SLEEP) to check timeouts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/client.hpp"

namespace locklab::redis {

class EmbeddedServer {
 public:
  struct Options {
    std::string executable;                          // empty: see find_executable()
    std::chrono::milliseconds start_timeout{5'000};  // until PING answers
    std::vector<std::string> extra_args;             // e.g. {"--maxmemory", "10mb"}
    bool enable_debug_command = false;               // DEBUG from local connections (see the essay)
    std::vector<std::string> launch_prefix;          // argv before the server's (see the essay); empty: none
    std::vector<std::string> bind;                   // addresses to bind; empty: 127.0.0.1
    // Non-empty: written to <directory>/redis.conf and passed as the first
    // argument, before the command-line options (which override it). For
    // Sentinel (embedded_replica_set.hpp), which needs a config file it can
    // rewrite; "--sentinel" then goes in extra_args.
    std::string config_text;
  };

  // Starts the server (see the essay). Throws std::runtime_error if the
  // binary is missing or the server does not come up within start_timeout.
  EmbeddedServer();
  explicit EmbeddedServer(Options options);
  // stop(), then removes the directory. Never throws.
  ~EmbeddedServer();
  EmbeddedServer(const EmbeddedServer&) = delete;
  EmbeddedServer& operator=(const EmbeddedServer&) = delete;

  // n independent servers, each on its own port and directory.
  static std::vector<std::unique_ptr<EmbeddedServer>> start_many(int n);
  static std::vector<std::unique_ptr<EmbeddedServer>> start_many(int n, const Options& options);

  // $LOCKLAB_REDIS_SERVER, `redis-server` on $PATH, /usr/bin/redis-server,
  // or throws std::runtime_error.
  static std::string find_executable();

  const std::string& host() const noexcept { return host_; }
  int port() const noexcept { return port_; }
  std::string url() const { return "redis://" + host_ + ":" + std::to_string(port_); }
  // Client options pointing at this server (other fields at their defaults).
  Client::Options client_options() const;
  // The server's process id while running, else -1.
  pid_t pid() const noexcept { return pid_; }
  bool running() const noexcept { return pid_ > 0; }
  const std::string& directory() const noexcept { return dir_; }

  // Clean shutdown: SIGTERM, up to 2 s, then SIGKILL; reaps the process.
  // Idempotent; never throws.
  void stop() noexcept;
  // SIGKILL now and reap: a crash. Idempotent; never throws.
  void kill() noexcept;
  // Starts the server again on the same port (after stop() or kill(); if
  // running, stops it first). Throws std::runtime_error if it does not come
  // up (e.g. the port was taken meanwhile; by another redis-server: the
  // message names its process_id).
  void restart();

  // The last lines of the server's log (for error messages).
  std::string log_tail(std::size_t max_bytes = 2'000) const;

 private:
  bool launch(int port, std::string& why);
  void reap(std::chrono::milliseconds grace) noexcept;

  Options options_;
  std::string executable_;
  std::string host_ = "127.0.0.1";
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace locklab::redis
