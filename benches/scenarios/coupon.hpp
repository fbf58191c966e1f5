// coupon.hpp — the coupon sale's experiment
// (docs/case-studies.md#clock-drift-and-fencing-at-a-coupon-sale) as a
// reusable engine: a first-come-first-served coupon issue guarded by a Redis
// lock, with a fault injected into the lock while one client holds it, with
// and without fencing tokens. Header-only so that benches/scenarios (the
// tables) and tests/distributed/scenario_invariants_test.cpp (the invariants)
// run the same code.
//
// The world
// ---------
//   db server         the "database": the coupon counter and, for fenced
//                     runs, the FencedResource hash and the token counter
//                     of FencingTokens (where the lock itself has none)
//   lock server(s)    3 independent servers for RedLock, 1 for SpinLock /
//                     FencedSpinLock (kept apart from the db so that a lock
//                     server's restart loses the lock, not the coupons)
// A request of a client (the case study's HTTP call):
//   acquire (lock timeout) -> [token] -> read issued -> if issued >= coupons:
//   "sold out" -> else write issued + 1 -> "issued" -> release.
// Unfenced, the counter is a plain string key (GET, then SET: read-compute-
// write, not atomic on purpose). Fenced, it is a FencedResource (its value
// read, the write carries the token and the resource rejects a stale one).
// Columns: issued responses, actually issued (the counter at the end),
// phantom issues (responses - actual: updates lost to a second holder),
// after-sold-out responses, lock timeouts, fence rejections, token p95 (the
// time to get a token when it is a separate INCR), plus errors (Redis
// unreachable during a restart) and lock_lost (unlock found the lease gone).
// Each client stops at its first "sold out" answer or at the run's cap.
//
// The faults — and why each one breaks the unfenced run EVERY time
// ------------------------------------------------------------------
// Luck is taken out of it: one "victim" client takes the lock before the
// others start, reads the counter (r), and then the fault strikes while it
// holds the lock. The victim then "works" until the side-channel key
// <prefix>:commits shows that another client has written (or a cap), and
// writes r + 1. Since another client wrote after the victim's read, that
// write is stale: unfenced, it sets the counter back (>= 1 lost update, so
// phantom >= 1, every run); fenced, the other client's token was larger, so
// the resource rejects the victim's write (phantom 0, every run). Faults:
// - kDrift (RedLock, 3 servers, lease 1,000 ms): right after the victim's
//   acquire, the key's TTL on 2 of the 3 servers is cut to lease - skew =
//   100 ms (PEXPIRE): what the case study emulated with a skewed TTL and what
//   a 900 ms clock jump on those nodes does. The others get a quorum 100 ms
//   later. The victim's validity() still says ~0.7 s when it writes: the lock
//   cannot know. Tokens: FencingTokens on the db (RedLock's N servers have no
//   common counter).
// - kPause (SpinLock / FencedSpinLock, lease 500 ms): the victim is a
//   separate process which, right after its read, stops itself with SIGSTOP
//   (a GC pause, at a reproducible point); the parent keeps it stopped past
//   the lease until another client wrote, then sends SIGCONT.
// - kRestart (SpinLock, lease 1,000 ms): right after the victim's read the
//   lock server is killed (SIGKILL; no persistence) and started again at
//   once: the lock key is gone and the others acquire. Tokens from the db.
// - kRestartDelayed: the same, but the server stays down for lease + 300 ms
//   (antirez's rule: restart only after every lease it granted has expired).
//   Nobody can acquire while the victim still works, so no violation even
//   unfenced: the rule fixes restarts (not pauses, not drift).
// The resource: Redis (the default: the counter a string key, the fenced
// resource redis::FencedResource's hash, both on the db server) or
// PostgreSQL (CouponConfig::resource = kPostgres: both are rows of
// pg::FencedResource's table on an EmbeddedPostgres, or on LOCKLAB_PG_URL's
// server; the unfenced write a plain UPDATE, the fenced one the database's
// conditional UPDATE, which refuses and counts a stale token itself). The
// lock servers, the token counter and the side-channel key stay in Redis:
// only what the lock protects moves. CouponResult::resource_rejections is
// the resource's own count of refusals (the hash's field, the row's column),
// read from its server at the end of the run.
// Fenced runs are safe here because the resource orders writers by token
// and every other holder's critical section is short (ms) against its
// lease; FencedResource checks writes only, so two holders that both READ
// before either writes, the older one writing first, would still lose an
// update: the victim never writes before a newer holder's accepted write
// (it waits for one), which is what makes 0 phantoms reproducible here.
// A client that is itself stalled past its lease (a loaded machine: the
// server tests run four at a time on two cores) is such an unplanned older
// holder, and its write can land between a newer holder's read and write.
// Tally::late_writes counts the accepted writes that returned after the
// writer's lease ran out (RedLock: validity() 0; the other locks: a lease
// since the acquire began), the victim's aside; each can lose at most one
// update, so a fenced run has at most that many phantoms, and 0 without
// one.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/child_process.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/red_lock.hpp"
#include "distributed/spin_lock.hpp"
#include "postgres/connection.hpp"
#include "postgres/embedded_postgres.hpp"
#include "postgres/fenced_resource.hpp"

namespace locklab::scenarios {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

enum class Fault { kNone, kDrift, kPause, kRestart, kRestartDelayed };

inline const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kDrift: return "drift";
    case Fault::kPause: return "pause";
    case Fault::kRestart: return "restart";
    case Fault::kRestartDelayed: return "restart_delayed";
  }
  return "?";
}

// Where the coupons are kept (see the essay).
enum class Resource { kRedis, kPostgres };

inline const char* resource_label(Resource r) { return r == Resource::kPostgres ? "postgres" : "redis"; }

// "k=v;k=v" <-> map: how a child process gets its configuration.
using Args = std::map<std::string, std::string>;
inline std::string encode(const Args& a) {
  std::string s;
  for (const auto& [k, v] : a) s += k + "=" + v + ";";
  return s;
}
inline Args decode(const std::string& s) {
  Args a;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ';');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("scenario child: bad argument '" + item + "'");
    a[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return a;
}
inline std::int64_t arg_int(const Args& a, const std::string& k) {
  auto it = a.find(k);
  if (it == a.end()) throw std::invalid_argument("scenario child: missing argument '" + k + "'");
  return std::stoll(it->second);
}

// Starts a child process in `role` ("client", "victim") with `args`;
// returns its pid. The scenario binary re-executes itself; the test binary
// runs a DISABLED_ test.
using Launcher = std::function<pid_t(const std::string& role, const Args& args)>;

struct CouponConfig {
  Fault fault = Fault::kNone;
  bool fenced = false;
  bool red_lock = true;  // else SpinLock / FencedSpinLock on one server
  Resource resource = Resource::kRedis;
  int coupons = 100;
  int clients = 40;
  bool processes = false;  // each client its own process (needs a Launcher)
  ms lease{1'000};
  ms lock_timeout{250};
  ms retry{10};  // RedLock: mean of its random delay; SpinLock: its interval
  ms skew{900};        // kDrift: lease - skew is what 2 of 3 nodes keep
  ms run_cap{20'000};  // a hang detector for the whole run
  std::string prefix = "locklab:coupon";
};

// What the clients saw. Summed over clients (and the victim).
struct Tally {
  std::int64_t requests = 0, issued = 0, after_sold_out = 0, lock_timeouts = 0, fence_rejections = 0,
               errors = 0, lock_lost = 0;
  // Accepted writes that returned after the writer's lease had run out (see
  // the header); the victim's planned stale write is not counted.
  std::int64_t late_writes = 0;
  std::vector<double> token_ms;

  void add(const Tally& o) {
    requests += o.requests;
    issued += o.issued;
    after_sold_out += o.after_sold_out;
    lock_timeouts += o.lock_timeouts;
    fence_rejections += o.fence_rejections;
    errors += o.errors;
    lock_lost += o.lock_lost;
    late_writes += o.late_writes;
    token_ms.insert(token_ms.end(), o.token_ms.begin(), o.token_ms.end());
  }
  std::string encode_line() const {
    std::ostringstream s;
    s << requests << ' ' << issued << ' ' << after_sold_out << ' ' << lock_timeouts << ' ' << fence_rejections << ' '
      << errors << ' ' << lock_lost << ' ' << late_writes << ' ' << token_ms.size();
    for (double t : token_ms) s << ' ' << t;
    return s.str();
  }
  static Tally decode_line(const std::string& line) {
    std::istringstream s(line);
    Tally t;
    std::size_t n = 0;
    s >> t.requests >> t.issued >> t.after_sold_out >> t.lock_timeouts >> t.fence_rejections >> t.errors >> t.lock_lost >>
        t.late_writes >> n;
    if (!s) throw std::runtime_error("scenario child: unreadable tally '" + line.substr(0, 80) + "'");
    t.token_ms.resize(n);
    for (auto& v : t.token_ms) s >> v;
    return t;
  }
};

struct CouponResult {
  Tally tally;
  std::int64_t actual = 0;  // the counter at the end
  std::int64_t phantom = 0;
  double token_p95_ms = -1;  // -1: no separate token step
  std::string victim;        // what the victim saw ("rejected", "issued", ...)
  double victim_validity_ms = -1;
  // The refusals the resource itself counted (Redis hash field or
  // PostgreSQL column `rejected`); equals tally.fence_rejections unless a
  // client lost a reply.
  std::int64_t resource_rejections = 0;
  double wall_ms = 0;
  bool violation() const { return phantom != 0; }
};

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// The ports a client needs, so a child process can build the same world.
struct Ports {
  int db = 0;
  std::vector<int> lock;
  std::string pg_url;  // Resource::kPostgres: the server's URL (with its password)
};

// One client's connections and lock, in any process.
class CouponClient {
 public:
  CouponClient(const Ports& ports, const CouponConfig& c) : config_(c) {
    db_ = std::make_unique<redis::Client>(options(ports.db));
    for (int p : ports.lock) locks_.push_back(std::make_unique<redis::Client>(options(p)));
    if (c.red_lock) {
      std::vector<redis::Client*> nodes;
      for (auto& l : locks_) nodes.push_back(l.get());
      redis::RedLock::Options o;
      o.lease = c.lease;
      o.retry_delay = c.retry;
      red_ = std::make_unique<redis::RedLock>(nodes, lock_name(), o);
    } else if (c.fenced && c.fault == Fault::kPause) {
      redis::FencedSpinLock::Options o;
      o.lease = c.lease;
      o.retry_interval = c.retry;
      o.jitter = 0.5;
      fenced_spin_ = std::make_unique<redis::FencedSpinLock>(*locks_.at(0), lock_name(), o);
    } else {
      redis::SpinLock::Options o;
      o.lease = c.lease;
      o.retry_interval = c.retry;
      o.jitter = 0.5;
      spin_ = std::make_unique<redis::SpinLock>(*locks_.at(0), lock_name(), o);
    }
    if (c.fenced && !fenced_spin_) tokens_ = std::make_unique<redis::FencingTokens>(*db_, lock_name());
    if (c.resource == Resource::kPostgres) {
      pg::Connection::Options o = pg::Connection::Options::from_url(ports.pg_url);
      o.connect_timeout = std::chrono::seconds(2);
      pg_ = std::make_unique<pg::Connection>(o);
      // Both rows of pg::FencedResource's table: the fenced resource, and the
      // plain counter of unfenced runs (written without a token check).
      pg_resource_ = std::make_unique<pg::FencedResource>(*pg_, resource_name());
      pg_counter_ = std::make_unique<pg::FencedResource>(*pg_, counter_name());
    } else {
      resource_ = std::make_unique<redis::FencedResource>(*db_, resource_name());
    }
  }

  std::string lock_name() const { return config_.prefix + ":lock"; }
  std::string resource_name() const { return config_.prefix + ":resource"; }
  std::string counter_name() const { return config_.prefix + ":issued"; }
  std::string commits_name() const { return config_.prefix + ":commits"; }
  redis::Client& db() { return *db_; }
  redis::Client& lock_client(std::size_t i) { return *locks_.at(i); }
  redis::RedLock* red_lock() { return red_.get(); }

  bool acquire(ms timeout) {
    if (red_) return red_->try_lock_for(timeout);
    if (fenced_spin_) return fenced_spin_->try_lock_for(timeout);
    return spin_->try_lock_for(timeout);
  }
  // The token of the current hold (0 unfenced); a separate INCR is timed.
  std::int64_t token(Tally& t) {
    if (!config_.fenced) return 0;
    if (fenced_spin_) return fenced_spin_->token();
    const auto start = Clock::now();
    const std::int64_t k = tokens_->next();
    t.token_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    return k;
  }
  void release() {
    if (red_) {
      red_->unlock();
    } else if (fenced_spin_) {
      fenced_spin_->unlock();
    } else {
      spin_->unlock();
    }
  }
  // Whether the current hold's lease has run out (conservatively: RedLock's
  // validity() already subtracts its clock-drift allowance).
  bool lease_ran_out(Clock::time_point acquire_began) const {
    if (red_) return red_->validity() <= ms(0);
    return Clock::now() - acquire_began >= config_.lease;
  }
  bool held() const {
    if (red_) return red_->is_held_by_current_thread();
    if (fenced_spin_) return fenced_spin_->is_held_by_current_thread();
    return spin_->is_held_by_current_thread();
  }
  std::int64_t read() {
    if (pg_) {
      auto v = (config_.fenced ? pg_resource_ : pg_counter_)->read();
      return v ? std::stoll(*v) : 0;
    }
    if (config_.fenced) {
      auto v = resource_->read();
      return v ? std::stoll(*v) : 0;
    }
    redis::Reply r = db_->command({"GET", counter_name()});
    return r.is_nil() ? 0 : std::stoll(r.as_string());
  }
  // True if the resource took the write.
  bool write(std::int64_t token, std::int64_t value) {
    bool ok = true;
    if (pg_ && config_.fenced) {
      ok = pg_resource_->write(token, std::to_string(value)).accepted;
    } else if (pg_) {
      pg_->exec("UPDATE locklab_fenced_resource SET value = $2 WHERE name = $1", {counter_name(), value});
    } else if (config_.fenced) {
      ok = resource_->write(token, std::to_string(value)).accepted;
    } else {
      db_->command({"SET", counter_name(), std::to_string(value)});
    }
    if (ok) db_->command({"INCR", commits_name()});
    return ok;
  }
  // The refusals the resource counted itself (see CouponResult).
  std::int64_t resource_rejections() { return pg_ ? pg_resource_->totals().rejected : resource_->totals().rejected; }
  // Back to a fresh resource (the Redis side is FLUSHALLed by World::flush).
  void clear_postgres() {
    if (!pg_) return;
    pg_resource_->clear();
    pg_counter_->clear();
  }

  std::int64_t commits() {
    redis::Reply r = db_->command({"GET", commits_name()});
    return r.is_nil() ? 0 : std::stoll(r.as_string());
  }

  // Releases if held, counting LockLost and Redis errors.
  void release_counted(Tally& t) {
    if (!held()) return;
    try {
      release();
    } catch (const redis::LockLost&) {
      ++t.lock_lost;
    } catch (const redis::Error&) {
      ++t.errors;
    }
  }

  // Requests until this client sees "sold out" or `until`.
  Tally run(Clock::time_point until) {
    Tally t;
    while (Clock::now() < until) {
      ++t.requests;
      try {
        const auto acquire_began = Clock::now();
        if (!acquire(config_.lock_timeout)) {
          ++t.lock_timeouts;
          continue;
        }
        const std::int64_t token = this->token(t);
        const std::int64_t issued = read();
        if (issued >= config_.coupons) {
          ++t.after_sold_out;
          release_counted(t);
          break;
        }
        if (write(token, issued + 1)) {
          ++t.issued;
          if (lease_ran_out(acquire_began)) ++t.late_writes;
        } else {
          ++t.fence_rejections;
        }
        release_counted(t);
      } catch (const redis::Error&) {
        ++t.errors;
        release_counted(t);
        std::this_thread::sleep_for(config_.retry);
      } catch (const pg::Error&) {
        ++t.errors;
        release_counted(t);
        std::this_thread::sleep_for(config_.retry);
      }
    }
    return t;
  }

 private:
  static redis::Client::Options options(int port) {
    redis::Client::Options o;
    o.port = port;
    o.connect_timeout = 200ms;
    o.command_timeout = 2s;
    return o;
  }

  CouponConfig config_;
  std::unique_ptr<redis::Client> db_;
  std::vector<std::unique_ptr<redis::Client>> locks_;
  std::unique_ptr<redis::RedLock> red_;
  std::unique_ptr<redis::SpinLock> spin_;
  std::unique_ptr<redis::FencedSpinLock> fenced_spin_;
  std::unique_ptr<redis::FencingTokens> tokens_;
  std::unique_ptr<redis::FencedResource> resource_;
  std::unique_ptr<pg::Connection> pg_;
  std::unique_ptr<pg::FencedResource> pg_resource_;
  std::unique_ptr<pg::FencedResource> pg_counter_;
};

// The configuration and world of a child, as Args.
inline Args child_args(const CouponConfig& c, const Ports& p, const std::string& out) {
  Args a{{"fault", std::to_string(static_cast<int>(c.fault))},
         {"fenced", c.fenced ? "1" : "0"},
         {"red_lock", c.red_lock ? "1" : "0"},
         {"resource", std::to_string(static_cast<int>(c.resource))},
         {"pg_url", p.pg_url},
         {"coupons", std::to_string(c.coupons)},
         {"lease", std::to_string(c.lease.count())},
         {"lock_timeout", std::to_string(c.lock_timeout.count())},
         {"retry", std::to_string(c.retry.count())},
         {"run_cap", std::to_string(c.run_cap.count())},
         {"prefix", c.prefix},
         {"db", std::to_string(p.db)},
         {"out", out}};
  std::string locks;
  for (int l : p.lock) locks += std::to_string(l) + ",";
  a["locks"] = locks;
  return a;
}

inline void from_args(const Args& a, CouponConfig& c, Ports& p) {
  c.fault = static_cast<Fault>(arg_int(a, "fault"));
  c.fenced = arg_int(a, "fenced") != 0;
  c.red_lock = arg_int(a, "red_lock") != 0;
  c.resource = static_cast<Resource>(arg_int(a, "resource"));
  p.pg_url = a.at("pg_url");
  c.coupons = static_cast<int>(arg_int(a, "coupons"));
  c.lease = ms(arg_int(a, "lease"));
  c.lock_timeout = ms(arg_int(a, "lock_timeout"));
  c.retry = ms(arg_int(a, "retry"));
  c.run_cap = ms(arg_int(a, "run_cap"));
  c.prefix = a.at("prefix");
  p.db = static_cast<int>(arg_int(a, "db"));
  std::stringstream in(a.at("locks"));
  for (std::string port; std::getline(in, port, ',');) {
    if (!port.empty()) p.lock.push_back(std::stoi(port));
  }
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Child role "client": one client's run; its tally goes to args["out"].
inline int client_main(const Args& a) {
  CouponConfig c;
  Ports p;
  from_args(a, c, p);
  // Connect with retries: a lock server may be restarting right now.
  std::unique_ptr<CouponClient> client;
  const auto until = Clock::now() + c.run_cap;
  for (;;) {
    try {
      client = std::make_unique<CouponClient>(p, c);
      break;
    } catch (const redis::Error&) {
      if (Clock::now() >= until) throw;
      std::this_thread::sleep_for(10ms);
    } catch (const pg::Error&) {
      if (Clock::now() >= until) throw;
      std::this_thread::sleep_for(10ms);
    }
  }
  write_file(a.at("out"), client->run(until).encode_line());
  return 0;
}

// Child role "victim" (kPause): acquire, read, SIGSTOP itself; once
// continued, write the stale value. Writes "<tally>" to args["out"] and the
// outcome word to args["out"] + ".word".
inline int victim_main(const Args& a) {
  CouponConfig c;
  Ports p;
  from_args(a, c, p);
  CouponClient client(p, c);
  Tally t;
  ++t.requests;
  if (!client.acquire(5s)) return 3;
  const std::int64_t token = client.token(t);
  const std::int64_t r = client.read();
  write_file(a.at("out") + ".read", std::to_string(r));
  ::kill(::getpid(), SIGSTOP);  // the pause starts here, at a known point
  const bool ok = client.write(token, r + 1);
  ok ? ++t.issued : ++t.fence_rejections;
  client.release_counted(t);
  write_file(a.at("out") + ".word", ok ? "issued" : "rejected");
  write_file(a.at("out"), t.encode_line());
  return 0;
}

// The servers of one scenario: the db and the lock servers, and the
// PostgreSQL server of Resource::kPostgres runs (started by the first such
// run: LOCKLAB_PG_URL's, else an EmbeddedPostgres).
struct World {
  std::unique_ptr<redis::EmbeddedServer> db;
  std::vector<std::unique_ptr<redis::EmbeddedServer>> lock;
  std::unique_ptr<pg::ServerFromEnvOrEmbedded> postgres;

  explicit World(int lock_servers) {
    db = std::make_unique<redis::EmbeddedServer>();
    lock = redis::EmbeddedServer::start_many(lock_servers);
  }
  Ports ports() const {
    Ports p{db->port(), {}, postgres ? postgres->options().url : ""};
    for (auto& l : lock) p.lock.push_back(l->port());
    return p;
  }
  // Starts the PostgreSQL side if it is not running yet (from the thread
  // that calls run_coupon: see EmbeddedPostgres's PR_SET_PDEATHSIG).
  void need_postgres() {
    if (!postgres) postgres = std::make_unique<pg::ServerFromEnvOrEmbedded>();
  }
  void flush() {
    for (redis::EmbeddedServer* s : all()) {
      if (!s->running()) s->restart();
      redis::Client c(s->client_options());
      c.command({"FLUSHALL"});
    }
  }
  std::vector<redis::EmbeddedServer*> all() {
    std::vector<redis::EmbeddedServer*> v{db.get()};
    for (auto& l : lock) v.push_back(l.get());
    return v;
  }
};

namespace detail {

inline bool wait_for(const std::function<bool()>& done, ms bound) {
  const auto deadline = Clock::now() + bound;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace detail

// One run of the coupon experiment in `world` (flushed first). Throws
// std::runtime_error if a child fails or the victim cannot play its part.
inline CouponResult run_coupon(World& world, const CouponConfig& c, const Launcher& launch = {}) {
  if ((c.processes || c.fault == Fault::kPause) && !launch) {
    throw std::invalid_argument("run_coupon: processes and the pause fault need a Launcher");
  }
  if (c.red_lock != (world.lock.size() == 3) || (!c.red_lock && world.lock.size() != 1)) {
    throw std::invalid_argument("run_coupon: RedLock needs a world of 3 lock servers, SpinLock of 1");
  }
  if (c.resource == Resource::kPostgres) world.need_postgres();
  world.flush();
  const Ports ports = world.ports();
  const auto start = Clock::now();
  const auto until = start + c.run_cap;
  CouponResult result;
  CouponClient probe(ports, c);
  probe.clear_postgres();
  char tmpl[] = "/tmp/locklab-coupon-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl) != nullptr ? tmpl : throw std::runtime_error("mkdtemp failed");
  struct RemoveDir {
    std::string d;
    ~RemoveDir() {
      std::error_code ignored;  // a leftover temporary folder is not worth an exception in a destructor
      std::filesystem::remove_all(d, ignored);
    }
  } remove_dir{dir};

  // Thread clients connect now, before any fault.
  std::vector<std::unique_ptr<CouponClient>> clients;
  if (!c.processes) {
    for (int i = 0; i < c.clients; ++i) clients.push_back(std::make_unique<CouponClient>(ports, c));
  }

  // The victim takes the lock before anyone else runs. In-process victims
  // run on their own thread (a lock is owned by the thread that took it);
  // the fault is injected from this thread, because a restarted server dies
  // with the thread that started it (EmbeddedServer's PR_SET_PDEATHSIG).
  pid_t victim_pid = -1;
  ChildProcess victim_process;  // owns victim_pid: killed and reaped if the run throws
  Tally victim_tally;
  std::thread victim;
  std::promise<void> victim_holds, fault_injected;
  std::exception_ptr victim_error;
  if (c.fault == Fault::kPause) {
    victim_process = ChildProcess(launch("victim", child_args(c, ports, dir + "/victim")));
    victim_pid = victim_process.pid();
    if (!victim_process.running()) throw std::runtime_error("cannot start the victim process");
    int status = 0;
    const bool stopped = detail::wait_for([&] { return ::waitpid(victim_pid, &status, WNOHANG | WUNTRACED) == victim_pid; }, 10s);
    if (!stopped || !WIFSTOPPED(status)) {
      victim_process.kill();
      throw std::runtime_error("the victim process did not reach its pause");
    }
  } else if (c.fault != Fault::kNone) {
    auto holds = victim_holds.get_future();
    victim = std::thread([&, injected = fault_injected.get_future()]() mutable {
      try {
        CouponClient me(ports, c);
        ++victim_tally.requests;
        if (!me.acquire(5s)) throw std::runtime_error("the victim could not take the lock");
        const std::int64_t token = me.token(victim_tally);
        const std::int64_t read = me.read();
        victim_holds.set_value();
        injected.wait();
        // Work until another client wrote after our read, within a cap
        // shorter than the lease (a careful holder: it trusts its lease).
        const ms cap = c.fault == Fault::kDrift ? c.lease * 8 / 10 : c.lease * 3 / 4;
        const std::int64_t before = me.commits();
        detail::wait_for([&] { return me.commits() > before; }, cap);
        if (me.red_lock() != nullptr) {
          result.victim_validity_ms = static_cast<double>(me.red_lock()->validity().count());
        }
        try {
          const bool ok = me.write(token, read + 1);
          ok ? ++victim_tally.issued : ++victim_tally.fence_rejections;
          result.victim = ok ? "issued" : "rejected";
        } catch (const redis::Error&) {
          ++victim_tally.errors;
          result.victim = "error";
        } catch (const pg::Error&) {
          ++victim_tally.errors;
          result.victim = "error";
        }
        me.release_counted(victim_tally);
      } catch (...) {
        victim_error = std::current_exception();
        try {
          victim_holds.set_value();
        } catch (const std::future_error&) {
        }
      }
    });
    holds.wait();
    if (victim_error) {
      fault_injected.set_value();
      victim.join();
      std::rethrow_exception(victim_error);
    }
  }

  // The fault strikes while the victim holds the lock.
  if (c.fault == Fault::kDrift) {
    // Nodes 2 and 3 run `skew` ahead: the key expires lease - skew after it was set.
    const auto left = std::max<std::int64_t>(1, (c.lease - c.skew).count());
    for (std::size_t i = 1; i < 3; ++i) probe.lock_client(i).command({"PEXPIRE", probe.lock_name(), std::to_string(left)});
  } else if (c.fault == Fault::kRestart || c.fault == Fault::kRestartDelayed) {
    world.lock[0]->kill();
    if (c.fault == Fault::kRestart) world.lock[0]->restart();
  }
  if (victim.joinable()) fault_injected.set_value();

  // The load.
  std::vector<Tally> tallies(static_cast<std::size_t>(c.clients));
  std::vector<std::thread> threads;
  std::vector<ChildProcess> kids;  // killed and reaped if the run throws
  struct JoinAll {  // on an exception: never leave a joinable thread behind
    std::vector<std::thread>& ts;
    std::thread& v;
    ~JoinAll() {
      for (auto& t : ts) {
        if (t.joinable()) t.join();
      }
      if (v.joinable()) v.join();
    }
  } join_all{threads, victim};
  if (c.processes) {
    for (int i = 0; i < c.clients; ++i) {
      kids.emplace_back(launch("client", child_args(c, ports, dir + "/client" + std::to_string(i))));
      if (!kids.back().running()) throw std::runtime_error("cannot start a client process");
    }
  } else {
    for (int i = 0; i < c.clients; ++i) {
      threads.emplace_back([&, i] {
        const auto k = static_cast<std::size_t>(i);
        tallies[k] = clients[k]->run(until);
      });
    }
  }
  if (c.fault == Fault::kRestartDelayed) {
    // antirez's rule: down for longer than any lease it granted.
    std::this_thread::sleep_for(c.lease + 300ms);
    world.lock[0]->restart();
  }

  if (c.fault == Fault::kPause) {
    // Stopped until another client wrote, which cannot happen before the
    // victim's lease ran out: so it is stopped past its lease. Then SIGCONT.
    detail::wait_for([&] { return probe.commits() > 0; }, 10s);
    ::kill(victim_pid, SIGCONT);
    const int rc = victim_process.wait(20s);
    if (rc != 0) throw std::runtime_error("the victim process failed (status " + std::to_string(rc) + ")");
    victim_tally = Tally::decode_line(read_file(dir + "/victim"));
    result.victim = read_file(dir + "/victim.word");
  }
  if (victim.joinable()) victim.join();
  if (victim_error) std::rethrow_exception(victim_error);

  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < kids.size(); ++i) {
    const int rc = kids[i].wait(c.run_cap + 10s);
    if (rc != 0) throw std::runtime_error("client process " + std::to_string(i) + " failed (status " + std::to_string(rc) + ")");
    tallies[i] = Tally::decode_line(read_file(dir + "/client" + std::to_string(i)));
  }

  for (const auto& t : tallies) result.tally.add(t);
  result.tally.add(victim_tally);
  result.actual = probe.read();
  result.phantom = result.tally.issued - result.actual;
  result.resource_rejections = c.fenced ? probe.resource_rejections() : 0;
  result.token_p95_ms = percentile(result.tally.token_ms, 0.95);
  result.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

// The standard configuration of each fault.
inline CouponConfig fault_config(Fault f, bool fenced, Resource resource = Resource::kRedis) {
  CouponConfig c;
  c.fault = f;
  c.fenced = fenced;
  c.resource = resource;
  c.red_lock = f == Fault::kNone || f == Fault::kDrift;
  c.lease = f == Fault::kPause ? 500ms : 1'000ms;
  return c;
}

}  // namespace locklab::scenarios
