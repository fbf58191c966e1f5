// thread_sessions.hpp — one PostgreSQL session per calling thread, for the
// locks whose state lives in a session (AdvisoryLock, RowLock).
//
// Why a session per thread
// ------------------------
// PostgreSQL's own locks belong to a session (a session-level advisory
// lock) or to a session's open transaction (a row lock taken by SELECT ...
// FOR UPDATE). Two threads sharing one connection would share one owner,
// and the server could not tell them apart: the second lock() would be a
// re-entry, not a wait. So a lock object gives every thread that calls it a
// Connection of its own, as production gives each client process its own
// session. Each waiter of a benchmark is therefore one server backend
// process: 64 waiters are 64 connections, which the server's
// max_connections must allow (EmbeddedPostgres's bound is in its header).
//
// What it guarantees
// ------------------
// - mine() returns the calling thread's session, connecting on first use
//   (one TCP connect plus the SCRAM exchange, ~2-5 ms on loopback), or
//   binding one of the sessions open(n) connected beforehand: a benchmark
//   opens its waiters' sessions before the clock starts.
// - exec() counts every statement it sends (round_trips(), all sessions
//   together, readable from any thread while others run: an atomic).
// - A session whose connection broke (pg::Error kIo: server stopped, backend
//   terminated) is dropped by drop(); the server ended it too, releasing
//   every lock it held and rolling back its transaction. The thread's next
//   mine() connects afresh.
// A thread that exits keeps its session (and whatever it holds) until the
// object is destroyed; the destructor closes every session, which releases
// everything they hold on the server.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "postgres/connection.hpp"

namespace locklab::pg {

class ThreadSessions {
 public:
  // One thread's session and the lock state that lives in it.
  struct Session {
    std::unique_ptr<Connection> connection;  // null after drop(): reconnect on next use
    bool held = false;                       // this thread holds the lock object's lock
    // The session's lock_timeout in ms as last set by us (0: wait without
    // limit, PostgreSQL's default); -1: unknown (new or reconnected session).
    std::int64_t lock_timeout_ms = -1;
  };

  explicit ThreadSessions(Connection::Options options) : options_(std::move(options)) {}
  ThreadSessions(const ThreadSessions&) = delete;
  ThreadSessions& operator=(const ThreadSessions&) = delete;

  // The calling thread's session, connected. Throws pg::Error (kConnect,
  // kAuth) if it cannot connect; then nothing is bound.
  Session& mine();
  // The calling thread's session if it has one (connected or dropped), else
  // nullptr. Sends nothing.
  Session* mine_if_any();
  // Connects `n` more sessions now, for threads that have none yet.
  void open(int n);
  // Sends `sql` on `s` (one round trip, counted). When the error says the
  // session is over (detail::session_ended: kIo, or the server closing it),
  // drops the session's connection before the error leaves.
  Result exec(Session& s, std::string_view sql);
  // Closes `s`'s connection (the server ends the session).
  void drop(Session& s) noexcept;

  std::uint64_t round_trips() const noexcept { return round_trips_.load(std::memory_order_relaxed); }
  const Connection::Options& options() const noexcept { return options_; }

 private:
  Connection::Options options_;
  std::mutex mu_;  // guards the two containers, never held across a round trip
  std::vector<std::unique_ptr<Connection>> idle_;
  std::unordered_map<std::thread::id, std::unique_ptr<Session>> bound_;
  std::atomic<std::uint64_t> round_trips_{0};
};

}  // namespace locklab::pg
