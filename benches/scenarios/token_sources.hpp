// token_sources.hpp — where a fencing token comes from, and what each
// source costs: Redis INCR inside the acquire script (the lab's fenced
// locks), a separate Redis INCR, a PostgreSQL sequence (nextval) and a
// PostgreSQL row (UPDATE ... RETURNING), side by side at the same waiter
// counts. Header-only so that `scenarios token_sources` (the table) and
// tests/postgres/token_sources_scenario_test.cpp (every source's tokens
// are unique and increasing) run the same code.
//
// The case study (docs/case-studies.md#clock-drift-and-fencing-at-a-coupon-sale)
// measured a token from Redis INCR at p95 0.81 ms and one from its
// database at p95 7.91 ms, and concluded that the database's token was ten
// times dearer. What we measure instead, per source, at 1 and 50 waiters
// (threads, each with its own connection, all asking at once for a fixed
// time): the latency of one call that yields one token, p50 and p95, the
// tokens per second all waiters together, and the round trips a token adds
// to the lock's own.
//
//   source                  one call                                   extra round trips
//   redis_incr_in_acquire   the fenced SpinLock's acquire script        0: the token rides the
//                           (SET NX PX, then INCR <name>~fence)         acquire the holder makes anyway
//   redis_incr              INCR <name>~fence (FencingTokens::next)     1
//   pg_nextval              SELECT nextval('locklab_token_sequence')    1
//   pg_update_returning     UPDATE locklab_token_counter SET value =    1, and every waiter queues on
//                           value + 1 WHERE name = $1 RETURNING value   the row's lock until the commit
//
// Each waiter of redis_incr_in_acquire takes a lock of its own name (then
// releases it, untimed): the cost of the token, not of contention for one
// lock, which the redis_locks suite measures. The other three share one
// counter, as the holders of one lock would.
//
// What to read into the figures. The embedded PostgreSQL runs without
// fsync and with synchronous_commit=off (embedded_postgres.hpp), on
// loopback, on the same 2 cores as the waiters: a database that commits
// durably, across a network, pays a WAL flush and a network round trip per
// token on top (the case study's 7.91 ms is such a database; ours is not).
// What survives any configuration: nextval never waits for another session
// (sequences are not transactional: no row lock, nothing to roll back),
// while UPDATE ... RETURNING holds the row lock until its commit, so at 50
// waiters its tokens queue behind each other's commits. And only the row's
// tokens are as durable as the database's commits: a sequence's numbers
// are tied to no commit (a bare nextval waits for no WAL flush), so a crash
// may hand one out again, and a Redis counter without persistence restarts
// at 1 (distributed/fencing.hpp's essay).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/fencing.hpp"
#include "distributed/spin_lock.hpp"
#include "postgres/connection.hpp"

namespace locklab::scenarios::tokens {

using Clock = std::chrono::steady_clock;

enum class Source { kRedisIncrInAcquire, kRedisIncr, kPgNextval, kPgUpdateReturning };

inline constexpr Source kAllSources[] = {Source::kRedisIncrInAcquire, Source::kRedisIncr, Source::kPgNextval,
                                         Source::kPgUpdateReturning};

inline const char* source_id(Source s) {
  switch (s) {
    case Source::kRedisIncrInAcquire: return "redis_incr_in_acquire";
    case Source::kRedisIncr: return "redis_incr";
    case Source::kPgNextval: return "pg_nextval";
    case Source::kPgUpdateReturning: return "pg_update_returning";
  }
  return "?";
}

// Round trips a token adds to the lock's own (see the essay's table).
inline int extra_round_trips(Source s) { return s == Source::kRedisIncrInAcquire ? 0 : 1; }

struct Config {
  Source source = Source::kRedisIncr;
  int waiters = 1;
  std::chrono::milliseconds duration{1'000};
  std::string name = "locklab:tokens";  // the lock name, and the counter row's name
};

struct Result {
  std::uint64_t tokens = 0;
  double p50_ms = -1, p95_ms = -1, max_ms = -1;
  double tokens_per_s = 0;
  double wall_ms = 0;
  // Every waiter's tokens strictly increased; for the shared sources no
  // token was handed out twice across waiters either.
  bool unique_and_increasing = true;
};

struct Servers {
  redis::Client::Options redis;
  pg::Connection::Options postgres;
};

namespace detail {

inline double nearest_rank(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return -1;
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted.size()));
  return sorted[std::min(sorted.size() - 1, rank)];
}

}  // namespace detail

// Creates the sequence and the counter row if missing (idempotent).
inline void prepare_postgres(pg::Connection& db, const std::string& name) {
  // CACHE 1 (the default, said out loud): with a per-session cache, two
  // sessions hand out numbers from different blocks, out of call order.
  db.exec("CREATE SEQUENCE IF NOT EXISTS locklab_token_sequence CACHE 1");
  db.exec("CREATE TABLE IF NOT EXISTS locklab_token_counter (name text PRIMARY KEY, value bigint NOT NULL)");
  db.exec("INSERT INTO locklab_token_counter VALUES ($1, 0) ON CONFLICT (name) DO NOTHING", {name});
}

// One point: `config.waiters` threads take tokens from `config.source` for
// `config.duration`. Throws what the clients throw (redis::Error,
// pg::Error) if a source fails. `tokens_out`, if given, receives each
// waiter's tokens in the order it got them.
inline Result run(const Servers& servers, const Config& config,
                  std::vector<std::vector<std::int64_t>>* tokens_out = nullptr) {
  if (config.waiters < 1) throw std::invalid_argument("token_sources: waiters must be at least 1");
  const bool redis_source = config.source == Source::kRedisIncrInAcquire || config.source == Source::kRedisIncr;
  const auto n = static_cast<std::size_t>(config.waiters);
  std::unique_ptr<redis::Client> client;
  if (redis_source) {
    redis::Client::Options o = servers.redis;
    o.max_connections = n + 2;  // every waiter its own connection, as the PostgreSQL waiters have
    client = std::make_unique<redis::Client>(o);
  } else {
    pg::Connection setup(servers.postgres);
    prepare_postgres(setup, config.name);
  }
  std::vector<std::vector<double>> latency(n);
  std::vector<std::vector<std::int64_t>> tokens(n);
  std::vector<std::string> failures(n);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start{}, deadline{};
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      try {
        // Connections and lock objects first, untimed.
        std::unique_ptr<pg::Connection> db;
        std::unique_ptr<redis::SpinLock> lock;
        std::unique_ptr<redis::FencingTokens> counter;
        if (config.source == Source::kRedisIncrInAcquire) {
          redis::SpinLock::Options o;
          o.fenced = true;
          o.lease = std::chrono::seconds(10);
          lock = std::make_unique<redis::SpinLock>(*client, config.name + ":" + std::to_string(w), o);
        } else if (config.source == Source::kRedisIncr) {
          counter = std::make_unique<redis::FencingTokens>(*client, config.name);
        } else {
          db = std::make_unique<pg::Connection>(servers.postgres);
        }
        auto take = [&]() -> std::int64_t {
          switch (config.source) {
            case Source::kRedisIncrInAcquire: {
              if (!lock->try_lock()) throw std::runtime_error("a waiter's own lock was held by someone else");
              return lock->token();
            }
            case Source::kRedisIncr: return counter->next();
            case Source::kPgNextval: return db->exec("SELECT nextval('locklab_token_sequence')").int64(0, 0);
            case Source::kPgUpdateReturning:
              return db->exec("UPDATE locklab_token_counter SET value = value + 1 WHERE name = $1 RETURNING value",
                              {config.name})
                  .int64(0, 0);
          }
          return 0;
        };
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        auto& lat = latency[w];
        auto& tok = tokens[w];
        while (Clock::now() < deadline) {
          const auto t0 = Clock::now();
          const std::int64_t t = take();
          lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          tok.push_back(t);
          if (lock) lock->unlock();  // untimed: the release is the lock's, not the token's
        }
      } catch (const std::exception& e) {
        failures[w] = e.what();
        ready.fetch_add(1);  // never leave the starter waiting
      }
    });
  }
  while (ready.load() < config.waiters) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  start = Clock::now();
  deadline = start + config.duration;
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  for (const auto& f : failures) {
    if (!f.empty()) throw std::runtime_error(std::string("token_sources ") + source_id(config.source) + ": " + f);
  }
  Result r;
  std::vector<double> all;
  std::vector<std::int64_t> every;
  for (std::size_t w = 0; w < n; ++w) {
    all.insert(all.end(), latency[w].begin(), latency[w].end());
    for (std::size_t i = 1; i < tokens[w].size(); ++i) {
      if (tokens[w][i] <= tokens[w][i - 1]) r.unique_and_increasing = false;
    }
    every.insert(every.end(), tokens[w].begin(), tokens[w].end());
  }
  if (config.source != Source::kRedisIncrInAcquire) {  // one shared counter: no number twice
    std::sort(every.begin(), every.end());
    if (std::adjacent_find(every.begin(), every.end()) != every.end()) r.unique_and_increasing = false;
  }
  std::sort(all.begin(), all.end());
  r.tokens = all.size();
  r.p50_ms = detail::nearest_rank(all, 0.50);
  r.p95_ms = detail::nearest_rank(all, 0.95);
  r.max_ms = all.empty() ? -1 : all.back();
  r.wall_ms = wall_ms;
  r.tokens_per_s = wall_ms > 0 ? static_cast<double>(r.tokens) * 1e3 / wall_ms : 0;
  if (tokens_out != nullptr) *tokens_out = std::move(tokens);
  return r;
}

}  // namespace locklab::scenarios::tokens
