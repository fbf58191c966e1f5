// Suite `redis_rwlock`: the Redis read-write lock (distributed/
// read_write_lock.hpp) on the read-fraction curve, against a plain Redis
// mutex on the same points, on a private redis-server (EmbeddedServer on
// 127.0.0.1, or $LOCKLAB_REDIS_URL if you set it).
//
// The points
// ----------
//   redis_rwlock/<Impl>/waiters:<N>/read_pct:<p>/hold_us:<h>
// N waiter threads share one lock object and one Client. Each operation is
// a read with probability p% (each waiter draws from its own xorshift
// generator, seeded by its index, so a run's mix is reproducible), else a
// write: lock the side, hold (a sleep of h us: a distributed section waits
// on I/O, it does not spin), unlock. No think time.
//   ReadWriteLock   reads take read_lock(), writes write_lock()
//   PubSubLock      the plain-mutex baseline: every operation takes the
//                   one lock (the default Redis lock, read_write_lock's
//                   closest relative: hash, pub/sub, 2 round trips)
// Both with a fixed 10 s lease (no watchdog traffic in the window).
// read_pct: 100, 99, 90, 50 at hold_us 1000 (the curve of the goal), and
// read_pct 100 at hold_us 0 (lock + unlock back to back: the ceiling run,
// where only Redis and the client's CPU limit the readers).
//
// Counters besides the harness's (items_per_second = operations/s):
//   reads_per_second, writes_per_second   each kind's completed operations
//                                          over the run's wall time
//   round_trips_per_op                     client request/reply exchanges
//   redis_cmds_per_op                      commands Redis executed (INFO
//                                          commandstats, a script's inner
//                                          calls included)
//   server_cpu_us_per_op                   Redis CPU (INFO cpu, user + sys)
//   server_bound_ops_per_second            1e6 / server_cpu_us_per_op: the
//                                          operations/s at which the one Redis
//                                          thread would be busy all the time,
//                                          the ceiling the readers scale to
//   lost_leases_per_op                     LockLost from unlock (counted, not
//                                          fatal; any other exception fails
//                                          the point)
//
// Goal (measured, never asserted): at read_pct 100 ReadWriteLock's reads/s
// grow with waiters until the server's command rate for its scripts
// (server_bound_ops_per_second), while PubSubLock stays at about one
// operation per hold; at read_pct 50 both are writer-bound.
//
// Quick mode: waiters 1, 2, 4, 16, 64, 200 ms a point (about 12 s);
// `./lab smoke` runs it at 100 ms a point. Full: waiters 1..128, 1 s a point.
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benches/harness/suite.hpp"
#include "benches/server_lock_points.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/read_write_lock.hpp"

namespace locklab::bench {
namespace {

using redis::Client;

constexpr const char* kSuite = "redis_rwlock";
constexpr std::chrono::milliseconds kLease{10'000};

// The suite's server and clients, created on first use.
struct Redis {
  std::unique_ptr<redis::EmbeddedServer> server;
  std::unique_ptr<Client> client;  // the locks'
  std::unique_ptr<Client> probe;   // INFO only
};

Redis& redis_instance() {
  static Redis r = [] {
    Redis x;
    Client::Options o;
    if (auto env = Client::Options::from_env()) {
      o = *env;
    } else {
      x.server = std::make_unique<redis::EmbeddedServer>();
      o = x.server->client_options();
    }
    o.command_timeout = std::chrono::seconds(10);
    o.max_connections = 512;  // the full mode's 128 waiters, each one command at a time
    x.client = std::make_unique<Client>(o);
    x.probe = std::make_unique<Client>(o);
    return x;
  }();
  return r;
}

std::string fresh_name() {
  static std::atomic<int> n{0};
  return "locklab:bench:rwlock:" + std::to_string(::getpid()) + ":" + std::to_string(n.fetch_add(1));
}

// The two sides an operation can take: for the baseline both are the one mutex.
struct Sides {
  virtual ~Sides() = default;
  virtual void read_lock() = 0;
  virtual void read_unlock() = 0;
  virtual void write_lock() = 0;
  virtual void write_unlock() = 0;
};

struct ReadWriteSides final : Sides {
  explicit ReadWriteSides(Client& c) : rw(c, fresh_name(), options()) {}
  static redis::ReadWriteLock::Options options() {
    redis::ReadWriteLock::Options o;
    o.lease = kLease;
    return o;
  }
  void read_lock() override { rw.read_lock().lock(); }
  void read_unlock() override { rw.read_lock().unlock(); }
  void write_lock() override { rw.write_lock().lock(); }
  void write_unlock() override { rw.write_lock().unlock(); }
  redis::ReadWriteLock rw;
};

struct MutexSides final : Sides {
  explicit MutexSides(Client& c) : lock(c, fresh_name(), options()) {}
  static redis::PubSubLock::Options options() {
    redis::PubSubLock::Options o;
    o.lease = kLease;
    return o;
  }
  void read_lock() override { lock.lock(); }
  void read_unlock() override { lock.unlock(); }
  void write_lock() override { lock.lock(); }
  void write_unlock() override { lock.unlock(); }
  redis::PubSubLock lock;
};

struct alignas(64) Tally {
  std::uint64_t reads = 0;
  std::uint64_t writes = 0;
  std::uint64_t state = 0;  // xorshift64
};

ContentionResult measure(Sides& sides, const Workload& w, int read_pct, std::chrono::microseconds hold) {
  Redis& r = redis_instance();
  Client& c = *r.client;
  // Warm: loads the scripts outside the window.
  sides.read_lock();
  sides.read_unlock();
  sides.write_lock();
  sides.write_unlock();
  std::vector<Tally> tally(static_cast<std::size_t>(w.waiters));
  for (std::size_t i = 0; i < tally.size(); ++i) tally[i].state = 0x9E3779B97F4A7C15ull * (i + 1);
  std::atomic<std::uint64_t> lost{0};
  std::mutex error_mu;
  std::string first_error;
  std::atomic<bool> failed{false};
  const std::uint64_t threshold = static_cast<std::uint64_t>(read_pct);
  EventSource events = [&] {
    auto [calls, cpu] = redis_server_counters(*r.probe);
    return EventCounts{{"round_trips", static_cast<double>(c.round_trips())},
                       {"redis_cmds", calls},
                       {"server_cpu_us", cpu * 1e6}};
  };
  ContentionResult res = run_contention(
      w,
      [&](int i) {
        if (failed.load(std::memory_order_relaxed)) return;
        Tally& t = tally[static_cast<std::size_t>(i)];
        t.state ^= t.state << 13;
        t.state ^= t.state >> 7;
        t.state ^= t.state << 17;
        const bool read = t.state % 100 < threshold;
        try {
          if (read) {
            sides.read_lock();
          } else {
            sides.write_lock();
          }
          if (hold.count() > 0) std::this_thread::sleep_for(hold);
          try {
            if (read) {
              sides.read_unlock();
            } else {
              sides.write_unlock();
            }
          } catch (const redis::LockLost&) {
            lost.fetch_add(1, std::memory_order_relaxed);
          }
          ++(read ? t.reads : t.writes);
        } catch (const std::exception& e) {
          std::lock_guard g(error_mu);
          if (first_error.empty()) first_error = e.what();
          failed = true;
        }
      },
      events);
  if (failed) throw std::runtime_error(first_error);
  res.per_unit = "op";
  res.event_deltas.emplace_back("lost_leases", static_cast<double>(lost.load()));
  std::uint64_t reads = 0, writes = 0;
  for (const Tally& t : tally) {
    reads += t.reads;
    writes += t.writes;
  }
  const double wall = res.wall_seconds > 0 ? res.wall_seconds : 1.0;
  res.extra.emplace_back("reads_per_second", static_cast<double>(reads) / wall);
  res.extra.emplace_back("writes_per_second", static_cast<double>(writes) / wall);
  const double ops = static_cast<double>(reads + writes);
  for (const auto& [name, delta] : res.event_deltas) {
    if (name == "server_cpu_us" && ops > 0 && delta > 0) {
      res.extra.emplace_back("server_bound_ops_per_second", 1e6 / (delta / ops));
    }
  }
  return res;
}

template <class S>
void register_impl(const SuiteOptions& o, const std::string& impl, int read_pct, int hold_us) {
  for (int n : o.waiters) {
    Workload w;
    w.waiters = n;
    w.duration = o.duration;
    register_point(point_name(o.suite, impl, n, {{"read_pct", read_pct}, {"hold_us", hold_us}}), w,
                   [read_pct, hold_us](const Workload& wl) {
                     S sides(*redis_instance().client);
                     return measure(sides, wl, read_pct, std::chrono::microseconds(hold_us));
                   });
  }
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  // Sleep for the hold we name (the timer slack would add ~5% to a 1 ms
  // hold: see redis_locks_bench.cpp).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  try {
    return suite_main(kSuite, argc, argv, [](const SuiteOptions& o) {
      for (int read_pct : {100, 99, 90, 50}) {
        register_impl<ReadWriteSides>(o, "ReadWriteLock", read_pct, 1000);
        register_impl<MutexSides>(o, "PubSubLock", read_pct, 1000);
      }
      register_impl<ReadWriteSides>(o, "ReadWriteLock", 100, 0);
      register_impl<MutexSides>(o, "PubSubLock", 100, 0);
    });
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}
