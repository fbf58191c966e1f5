// Suite `redis_locks_pg`: PostgreSQL's own locks as peers of the Redis
// locks, on the `redis_locks` suite's workload and in its JSON schema, so
// that `./lab plot` draws them on the Redis curves (the points are named
// redis_locks/<Impl>/..., the plotting module merges files by that name,
// and the "pg." prefix draws them grey and dashed, as peers). Written to
// results/redis_locks_pg.json, beside redis_locks_python.json and
// redis_locks_node.json, against a private PostgreSQL (EmbeddedPostgres on
// 127.0.0.1, or $LOCKLAB_PG_URL if you set it: a scratch database, the
// suite creates a table there).
//
// Implementations
// ---------------
//   pg.advisory_lock       postgres/advisory_lock.hpp: pg_advisory_lock /
//                          pg_advisory_unlock on a session of each waiter's own
//   pg.select_for_update   postgres/row_lock.hpp: BEGIN; SELECT ... FOR UPDATE
//                          on one row / COMMIT
// Both wait inside the server, in its lock queues (a queue in arrival
// order, woken one at a time, not a herd), so they are the database's answer to
// FairLock's hand-off, at 2 round trips per acquisition whatever the
// contention.
//
// Points: redis_locks/<Impl>/waiters:<N>/hold_us:1000, the curve of the
// Redis suite: every waiter loops lock() (timed), a 1 ms hold (a sleep),
// unlock(), a 1 ms think (a sleep); a waiter still in lock() at the deadline
// finishes its acquisition. Waiters are threads of this process, each a
// session (a connection, a server process) of its own: a PostgreSQL lock's
// owner is its session, so that is what N clients are. The sessions are
// connected before the clock starts. No process split (a session is already
// what a process would bring), no hand-off or idle points.
// Waiters: the mode's (quick: 1, 2, 4, 16, 64), those above 64 left out:
// 64 sessions and the setup's fit EmbeddedPostgres's max_connections (128)
// with room to spare, and 128 server processes on 2 cores would measure the
// scheduler.
//
// Counters, as the Redis suite's: items_per_second (acquisitions/s),
// fairness, avg_ms / p50_ms / p95_ms / p99_ms (every acquire: lock() call to
// return), round_trips_per_acquire (statements sent by the lock, unlock's
// included), lost_leases_per_acquire (unlock() threw SessionLost: a session
// ended while held; counted, not fatal). cpu_per_wall is this process's
// CPU only: the server's work is in its own processes. No Redis counters.
//
// Goals (measured, never asserted): 2 round trips per acquisition at every
// waiter count; with a 1 ms hold the curve flattens near the 1 / hold
// ceiling like FairLock's.
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"
#include "benches/server_lock_points.hpp"
#include "postgres/advisory_lock.hpp"
#include "postgres/embedded_postgres.hpp"
#include "postgres/row_lock.hpp"

namespace locklab::bench {
namespace {

constexpr std::chrono::microseconds kHold{1'000};
constexpr std::chrono::microseconds kThink{1'000};
// The points overlay the Redis suite's: same suite name in the point names.
constexpr const char* kSuite = "redis_locks";
constexpr int kMaxWaiters = 64;

// The lock as the waiters see it: lock(), unlock(), and the two things a
// point needs besides (its sessions opened up front, its statement count).
class PgLock {
 public:
  virtual ~PgLock() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
  virtual void open_sessions(int n) = 0;
  virtual std::uint64_t round_trips() const = 0;
};

template <class L>
class Erased final : public PgLock {
 public:
  Erased(const pg::Connection::Options& o, std::int64_t id) : lock_(o, id) {}
  void lock() override { lock_.lock(); }
  void unlock() override { lock_.unlock(); }
  void open_sessions(int n) override { lock_.open_sessions(n); }
  std::uint64_t round_trips() const override { return lock_.round_trips(); }

 private:
  L lock_;
};

struct LockImpl {
  std::string name;
  std::function<std::unique_ptr<PgLock>(const pg::Connection::Options&, std::int64_t)> make;
};

const std::vector<LockImpl>& lock_impls() {
  static const std::vector<LockImpl> impls = {
      {"pg.advisory_lock",
       [](const pg::Connection::Options& o, std::int64_t id) { return std::make_unique<Erased<pg::AdvisoryLock>>(o, id); }},
      {"pg.select_for_update",
       [](const pg::Connection::Options& o, std::int64_t id) { return std::make_unique<Erased<pg::RowLock>>(o, id); }},
  };
  return impls;
}

// The server, started on first use from main's thread (which outlives it).
pg::ServerFromEnvOrEmbedded& server() {
  static pg::ServerFromEnvOrEmbedded s;
  return s;
}

std::int64_t fresh_id() {
  // The process id too: a rerun against a shared LOCKLAB_PG_URL server must
  // not meet a previous run's row or advisory lock.
  static std::atomic<std::int64_t> n{0};
  return static_cast<std::int64_t>(::getpid()) * 1'000'000 + n.fetch_add(1);
}

ContentionResult measure_curve(const Workload& w, const LockImpl& impl) {
  auto lock = impl.make(server().options(), fresh_id());
  lock->open_sessions(w.waiters);
  std::vector<std::vector<double>> waits(static_cast<std::size_t>(w.waiters));
  for (auto& v : waits) v.reserve(4096);
  WaiterTroubles troubles;  // counts pg::SessionLost, a redis::LockLost, as a lost lease
  EventSource events = [&lock] { return EventCounts{{"round_trips", static_cast<double>(lock->round_trips())}}; };
  ContentionResult result = run_contention(
      w, [&](int i) { timed_acquisition(*lock, kHold, kThink, waits[static_cast<std::size_t>(i)], troubles); },
      events);
  finish_curve_point(result, troubles, waits);
  return result;
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  // The Redis suite's reason: sleep for the 1 ms we name, not 1.07 ms
  // (benches/redis_locks_bench.cpp, main).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  try {
    return suite_main(kSuite, argc, argv, [](const SuiteOptions& o) {
      const auto hold_us = static_cast<std::int64_t>(kHold.count());
      for (const auto& impl : lock_impls()) {
        const LockImpl* li = &impl;
        for (int waiters : o.waiters) {
          if (waiters > kMaxWaiters) continue;
          Workload w{.waiters = waiters, .duration = o.duration};
          register_point(point_name(o.suite, impl.name, waiters, {{"hold_us", hold_us}}), w,
                         [li](const Workload& wl) { return measure_curve(wl, *li); });
        }
      }
    });
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}
