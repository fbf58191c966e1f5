// Suite `redis_locks`: the Redis locks of distributed/ on the shared
// contention harness, against a private redis-server (EmbeddedServer on
// 127.0.0.1, or $LOCKLAB_REDIS_URL if you set it).
//
// Four kinds of point
// --------------------
// Every waiter loops lock(), hold (a sleep: a distributed critical section
// waits on I/O, it does not spin), unlock(), think (a sleep), 1 ms each.
//   redis_locks/<Impl>/waiters:<N>/hold_us:<h>                  the curve:
//       N waiter threads of this process share one lock object and one
//       Client (one connection pool, one pub/sub connection)
//   redis_locks/<Impl>/waiters:<P*T>/hold_us:<h>/processes:<P>  the split:
//       P processes x T threads, each process with its own Client and lock
//       object on the same key and the same server
//   redis_locks/<Impl>/waiters:1/hold_us:<h>/handoff:1          unlock -> next owner
//   redis_locks/<Impl>/waiters:1/hold_us:0/idle_ms:<i>           one thread's lock() +
//       unlock() pair, back to back (idle_ms:0, "warm") or after 10 ms idle
//   redis_locks/PubSubLock/waiters:64/hold_us:1000/keys:64/masters:<M>
//       Redis Cluster scaling (measure_cluster below): 64 waiters, each on a
//       lock name of its own, spread over a local cluster of M = 1 or 3
//       masters; any mode, ~2 s to start the clusters once per run (always
//       local clusters of its own, whatever LOCKLAB_REDIS_URL says; a
//       redis+cluster:// URL there runs the other points on that cluster)
// Besides them, PubSubLock's watchdog and try_lock_async points (one holder
// or caller each, no hold_us in the name, ~7 s in all, any mode):
// redis_locks_watchdog.hpp.
// The split is what changes everything for the locks that share work inside
// a process: 50 waiters in one process are one SUBSCRIBE and one wake-up per
// release (PubSubLock), or one thread at Redis (GuardedLock); in 50
// processes they are 50 of each. Quick mode: 1x16, 4x4, 16x1; full: 1x50,
// 5x10, 50x1 (the goals below are at 50 waiters); --split=PxT,... sets it.
//
// How a split point runs (one point = P child processes)
// ------------------------------------------------------
// The parent starts the server (if it is the suite's own) and re-executes
// this binary P times with the hidden flags --child=<Impl> --key=<k>
// --threads=<T> --duration_ms=<d>, LOCKLAB_REDIS_URL pointing at its server,
// stdin and stdout on pipes. Each child connects, builds its lock, warms it
// (one acquire and release, so SCRIPT LOADs fall outside the window), parks
// its T threads and prints "ready". When all P are ready the parent reads
// the server's counters, writes "go <steady ns>" (a start 5 ms ahead: every
// child sees the same CLOCK_MONOTONIC) to each, and the children run until
// start + d, drain (a waiter in lock() at the deadline finishes its
// acquisition), and print their per-waiter counts, every acquire latency,
// their last waiter's exit time, CPU time, round trips and SUBSCRIBE count.
// The parent merges them into one result of the usual schema: the counts of
// all P x T waiters (so fairness spans processes), wall = last exit - start,
// CPU = the children's sum, latencies pooled. Bounds: 20 s for every child
// to be ready, d + 30 s for all results; past either the parent SIGKILLs
// and reaps every child and marks the point failed (children also die with
// the parent, PR_SET_PDEATHSIG, and by their own alarm after d + 60 s). A
// child's errors go to stderr, i.e. the suite's log. Why a Client per
// process, and the simpler one-child protocol of pinning and io_bound:
// benches/harness/point_process.hpp, whose flag helpers this suite shares.
// One split point by hand (after starting a redis-server yourself):
//   LOCKLAB_REDIS_URL=redis://127.0.0.1:6379 bench_redis_locks --child=FairLock
//       --key=k --threads=4 --duration_ms=200   (then type: go 0)
//
// Counters besides the harness's (items_per_second = acquisitions/s,
// fairness = min/max acquisitions per waiter):
//   avg_ms, p50_ms, p95_ms, p99_ms    acquire latency: lock() call to return
//                                     (handoff points: unlock() call to the
//                                     waiter's return from lock(); idle_ms
//                                     points: lock() call to unlock()'s return)
//   round_trips_per_acquire           client request/reply exchanges
//   redis_cmds_per_acquire            commands Redis executed (INFO commandstats;
//                                     a script's inner calls included)
//   server_cpu_us_per_acquire         Redis CPU (INFO cpu, user + sys)
//   subscribes_per_acquire            SUBSCRIBE/UNSUBSCRIBE on the pub/sub connection
//   lost_leases_per_acquire           unlock() found the lease expired (LockLost):
//                                     the holder was descheduled past its lease
//                                     (the stock test's SpinLock has 100 ms; on a
//                                     loaded machine it happens). Counted, not
//                                     fatal; any other exception in a waiter
//                                     fails the point
//
// Implementations: every lock of the registry (benches/redis_locks.json,
// read through benches/harness/redis_lock_registry.hpp), in its order; lease
// 10 s unless said otherwise; hold 1 ms. `bench_redis_locks --list_locks`
// prints the names. Today:
//   SpinLock                the stock test's: lease 100 ms, fixed 50 ms retry
//   SpinLock(fixed-1ms)     retry every 1 ms
//   SpinLock(exp-1-64ms)    retry 1, 2, 4 ... 64 ms, jitter 0.5 (exponential backoff)
//   PubSubLock, AdaptiveLock, FairLock   as in their headers (any other
//                           registry lock: its defaults, lease 10 s)
//   Guarded(<Lock>)         the same lock behind GuardedLock, for the locks
//                           the registry marks "guarded" (PubSubLock,
//                           FairLock): one thread per process at Redis per
//                           key; no fast-fail here: max_waiters is above any
//                           waiter count
// Peers run by their own scripts on the same kind of server and write the
// same schema into another file of this suite (benches/peers/README.md).
//
// Goals (measured here, never asserted): uncontended acquire+release in 2
// round trips, p50 <= 0.1 ms warm; at 50 waiters PubSubLock >= 650
// acquisitions/s with a 1 ms hold, p95 <= 100 ms, <= 3 round trips per
// acquisition; hand-off p50 <= 5 round trips (pub/sub); FairLock >= 750/s
// with p95/p50 <= 1.2 and a hand-off in <= 3 round trips.
// AdaptiveLock (one spinner per object, watching its local release signal,
// then PubSubLock's park): <= 5 round trips and <= 100 us of Redis CPU per
// acquisition at every waiter count of the curve, and >= 0.95x
// PubSubLock's acquisitions/s. (The k6 lock table's original, spinning on
// back-to-back SET NX, cost 27-39 round trips and 0.5-0.8 ms of Redis CPU.)
// SpinLock keeps the stock test's fixed 50 ms retry, shown honestly: expect
// a hand-off of ~interval/2 and a p95 of ~the interval already at 5 waiters.
// Against the library peers: at 50 waiters (1x50 and 5x10) our best lock
// >= 2x every library peer on throughput and p95, with <= 1/3 of their
// Redis commands per acquisition; Guarded(...) keeps Redis commands per
// acquisition flat from 1 to 50 waiters per process.
//
// Quick mode keeps the default waiters (1, 2, 4, 16, 64) and 200 ms a point
// with a 1 ms hold (each point also drains: waiters still in lock() at the
// deadline finish their acquisition). Full mode: 1 s a point, waiters 1..128.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "benches/harness/point_process.hpp"
#include "benches/harness/redis_lock_registry.hpp"
#include "benches/harness/suite.hpp"
#include "benches/redis_locks_watchdog.hpp"
#include "benches/server_lock_points.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/guarded_lock.hpp"
#include "distributed/key_slot.hpp"
#include "distributed/local_cluster.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/spin_lock.hpp"
#include "distributed/subscriber.hpp"

extern char** environ;

namespace locklab::bench {
namespace {

using Clock = std::chrono::steady_clock;
using redis::Client;

constexpr std::chrono::microseconds kHold{1'000};
constexpr std::chrono::microseconds kThink{1'000};
constexpr const char* kSuite = "redis_locks";

// -------------------------------------------------------- the locks measured

// The harness's Lockable seam with the type erased (AnyRedisLock of the
// registry), so one table of implementations serves the curve, the
// hand-off and the child processes.
using AnyLock = AnyRedisLock;

// GuardedLock<L> as a Lockable: lock() is try_acquire with an unbounded
// budget, and the Guard waits in a per-thread slot until unlock(). The
// registry's key is the lock's name, so every thread of the process shares
// one gate, one local semaphore and one L for it.
template <class L>
class Guarded final : public AnyLock {
 public:
  using Inner = redis::GuardedLock<L>;
  Guarded(typename Inner::Factory make, std::string key)
      : guarded_(std::move(make), options()), key_(std::move(key)) {}

  void lock() override { keep(guarded_.try_acquire(key_, std::chrono::hours(24))); }
  bool try_lock() override { return try_lock_for(std::chrono::milliseconds(0)); }
  bool try_lock_for(std::chrono::milliseconds wait) override {
    auto g = guarded_.try_acquire(key_, wait);
    if (!g) return false;
    keep(std::move(g));
    return true;
  }
  void unlock() override {
    std::unique_lock lk(mu_);
    auto node = held_.extract(std::this_thread::get_id());
    lk.unlock();
    if (node.empty()) throw std::logic_error("Guarded::unlock by a thread that holds nothing");
    node.mapped().release();
  }

 private:
  static typename Inner::Options options() {
    typename Inner::Options o;
    o.max_waiters = 1 << 20;  // this suite measures waiting, not shedding
    return o;
  }
  void keep(typename Inner::Guard g) {
    if (!g) throw std::runtime_error("GuardedLock gave up on '" + key_ + "' (outcome " +
                                     std::to_string(static_cast<int>(g.outcome())) + ")");
    std::lock_guard lk(mu_);
    held_.emplace(std::this_thread::get_id(), std::move(g));
  }

  Inner guarded_;
  std::string key_;
  std::mutex mu_;
  std::unordered_map<std::thread::id, typename Inner::Guard> held_;
};

using Factory = std::function<std::unique_ptr<AnyLock>(Client&, const std::string&)>;

struct LockImpl {
  std::string name;
  Factory make;
};

template <class L, class Options>
Factory plain(Options o) {
  return [o](Client& c, const std::string& name) { return std::make_unique<ErasedRedisLock<L>>(c, name, o); };
}

template <class L, class Options>
Factory guarded(Options o) {
  return [o](Client& c, const std::string& name) {
    Client* client = &c;
    return std::make_unique<Guarded<L>>(
        [client, o](const std::string& key) { return std::make_unique<L>(*client, key, o); }, name);
  };
}

// The suite's implementations, in plot order: each lock of the registry
// (benches/redis_locks.json) with a 10 s lease, SpinLock with three retry
// schedules instead of one, then Guarded(<Lock>) for the locks the registry
// marks "guarded". A lock added to the registry runs here with no edit.
const std::vector<LockImpl>& lock_impls() {
  static const std::vector<LockImpl> impls = [] {
    using namespace std::chrono_literals;
    std::vector<LockImpl> plain_impls, guarded_impls;
    for_each_redis_lock([&]<class L>(const RedisLockInfo& info) {
      const std::string name(info.name);
      if constexpr (std::is_same_v<L, redis::SpinLock>) {
        redis::SpinLock::Options stock_test;  // the stock test's defaults: lease 100 ms, fixed 50 ms retry
        redis::SpinLock::Options fixed1 = stock_test;
        fixed1.lease = 10s;
        fixed1.retry_interval = 1ms;
        redis::SpinLock::Options exp = fixed1;
        exp.backoff = redis::SpinLock::Backoff::kExponential;
        exp.multiplier = 2.0;
        exp.max_interval = 64ms;
        exp.jitter = 0.5;
        plain_impls.push_back({name, plain<L>(stock_test)});
        plain_impls.push_back({name + "(fixed-1ms)", plain<L>(fixed1)});
        plain_impls.push_back({name + "(exp-1-64ms)", plain<L>(exp)});
      } else {
        // AdaptiveLock: the k6 lock table's spin budget, 5 ms in [0.2, 20] ms;
        // FairLock: queue_lease 1 s, a waiter refreshes its entry every 333 ms.
        plain_impls.push_back({name, plain<L>(redis_lock_options<L>({.lease = 10s}))});
      }
      if (info.guarded) guarded_impls.push_back({"Guarded(" + name + ")", guarded<L>(redis_lock_options<L>({.lease = 10s}))});
    });
    plain_impls.insert(plain_impls.end(), guarded_impls.begin(), guarded_impls.end());
    return plain_impls;
  }();
  return impls;
}

const LockImpl& find_impl(const std::string& name) {
  for (const auto& impl : lock_impls()) {
    if (impl.name == name) return impl;
  }
  std::string known;
  for (const auto& impl : lock_impls()) known += " " + impl.name;
  throw std::invalid_argument("unknown lock implementation '" + name + "'; known:" + known);
}

// Pool and timeouts for a process whose waiters may all sit in BLPOP at once.
void size_client(Client::Options& o) {
  o.command_timeout = std::chrono::seconds(10);
  // Every FairLock waiter keeps one pooled connection inside BLPOP: room
  // for the full mode's 128 waiters plus the holder's release.
  o.max_connections = std::max<std::size_t>(o.max_connections, 512);
}

// ------------------------------------------------ server, counters, latency

// The suite's server and client, created on first use (from main's thread).
struct Redis {
  std::unique_ptr<redis::EmbeddedServer> server;
  Client::Options options;
  std::unique_ptr<Client> client;  // the locks'
  std::unique_ptr<Client> probe;   // INFO only, its own connection
};

Redis& redis_instance() {
  static Redis r = [] {
    Redis x;
    if (auto env = Client::Options::from_env()) {
      x.options = *env;
    } else {
      x.server = std::make_unique<redis::EmbeddedServer>();
      x.options = x.server->client_options();
    }
    size_client(x.options);
    x.client = std::make_unique<Client>(x.options);
    x.probe = std::make_unique<Client>(x.options);
    return x;
  }();
  return r;
}

double subscribes_of(Client& c) {
  redis::Subscriber* s = c.subscriber_if_started();
  return s != nullptr ? static_cast<double>(s->commands_sent()) : 0.0;
}

EventSource events_of(Redis& r) {
  return [&r] {
    auto [calls, cpu] = redis_server_counters(*r.probe);
    Client& c = *r.client;
    return EventCounts{{"round_trips", static_cast<double>(c.round_trips())},
                       {"redis_cmds", calls},
                       {"server_cpu_us", cpu * 1e6},
                       {"subscribes", subscribes_of(c)}};
  };
}

std::string fresh_name(const std::string& impl) {
  static std::atomic<int> n{0};
  // The process id too: a rerun against a shared LOCKLAB_REDIS_URL server
  // must not meet a previous run's keys (leases, queues).
  return "locklab:bench:" + impl + ":" + std::to_string(::getpid()) + ":" + std::to_string(n.fetch_add(1));
}

// --------------------------------------------------- in-process measurements

ContentionResult measure_curve(const Workload& w, const LockImpl& impl) {
  Redis& r = redis_instance();
  auto lock = impl.make(*r.client, fresh_name(impl.name));
  std::vector<std::vector<double>> waits(static_cast<std::size_t>(w.waiters));
  for (auto& v : waits) v.reserve(4096);
  WaiterTroubles troubles;
  ContentionResult result = run_contention(
      w, [&](int i) { timed_acquisition(*lock, kHold, kThink, waits[static_cast<std::size_t>(i)], troubles); },
      events_of(r));
  finish_curve_point(result, troubles, waits);
  return result;
}

// One holder, one waiter: time from the start of the holder's unlock() to
// the waiter's return from lock(). The waiter is given 5 ms to be waiting.
ContentionResult measure_handoff(const Workload& w, const LockImpl& impl) {
  Redis& r = redis_instance();
  auto lock = impl.make(*r.client, fresh_name(impl.name));
  EventSource events = events_of(r);
  std::vector<double> handoffs;
  std::atomic<std::int64_t> unlock_ns{0};
  std::atomic<int> round{0}, acquired{0};
  std::atomic<bool> stop{false};
  const EventCounts before = events();
  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  std::thread waiter([&] {
    for (int k = 1;; ++k) {
      round.wait(k - 1);
      if (stop.load()) return;
      lock->lock();  // the holder holds it now
      handoffs.push_back((Clock::now().time_since_epoch().count() - unlock_ns.load()) / 1e6);
      lock->unlock();
      acquired.store(k);
      acquired.notify_one();
    }
  });
  int k = 0;
  while (Clock::now() - start < w.duration) {
    lock->lock();
    round.store(++k);
    round.notify_one();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the waiter is waiting by now
    unlock_ns.store(Clock::now().time_since_epoch().count());
    lock->unlock();
    for (int seen = acquired.load(); seen != k; seen = acquired.load()) acquired.wait(seen);
  }
  stop.store(true);
  round.store(k + 1);
  round.notify_one();
  waiter.join();
  ContentionResult result;
  result.workload = w;
  result.per_unit = "acquire";
  result.ops_per_waiter = {static_cast<std::uint64_t>(k)};
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.cpu_seconds = detail::process_cpu_seconds() - cpu0;
  result.event_deltas = detail::subtract(events(), before);
  // Each round is 2 acquisitions (the holder's, uncontended, and the
  // waiter's): report the counters per acquisition like the curve points;
  // per hand-off round they are twice these.
  for (auto& [name, delta] : result.event_deltas) delta /= 2;
  add_latencies(result, std::move(handoffs));
  return result;
}

// ------------------------------------------------------------------ the child

struct ChildArgs {
  std::string impl, key;
  int threads = 1;
  std::chrono::milliseconds duration{200};
};

// One process of a split point (see the essay): T waiter threads on one
// Client and one lock object; prints "ready", waits for "go <ns>", runs,
// prints its result. Returns the exit status.
int child_main(const ChildArgs& a) {
  // Die with the parent, and never outlive a hung point.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 3;
  ::alarm(static_cast<unsigned>(a.duration.count() / 1000 + 60));
  const LockImpl& impl = find_impl(a.impl);
  auto options = Client::Options::from_env();
  if (!options) throw std::invalid_argument("--child needs LOCKLAB_REDIS_URL (the parent sets it)");
  size_client(*options);
  Client client(*options);
  auto lock = impl.make(client, a.key);
  // Warm-up: one acquire and release, so this process's SCRIPT LOADs and
  // first connections fall outside the measured window.
  const auto warm_deadline = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (lock->try_lock()) {
      try {
        lock->unlock();
      } catch (const redis::LockLost&) {
        // descheduled past a short lease: the warm-up did its job anyway
      }
      break;
    }
    if (Clock::now() > warm_deadline) throw std::runtime_error("warm-up: the lock was never free for 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  const auto n = static_cast<std::size_t>(a.threads);
  std::vector<std::vector<double>> waits(n);
  std::vector<std::uint64_t> ops(n, 0);
  std::vector<Clock::time_point> left(n);
  std::atomic<bool> go{false}, stop{false};
  WaiterTroubles troubles;
  std::latch parked(a.threads);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      waits[i].reserve(4096);
      parked.count_down();
      go.wait(false, std::memory_order_acquire);
      std::uint64_t k = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        timed_acquisition(*lock, kHold, kThink, waits[i], troubles);
        ++k;
      }
      left[i] = Clock::now();
      ops[i] = k;
    });
  }
  parked.wait();
  std::cout << "ready" << std::endl;
  std::string word;
  std::int64_t start_ns = 0;
  const bool told = static_cast<bool>(std::cin >> word >> start_ns) && word == "go";
  if (!told) stop.store(true);  // the parent gave up: let the threads out
  // "go 0" (by hand) starts now.
  const Clock::time_point start = start_ns > 0 ? Clock::time_point{std::chrono::nanoseconds(start_ns)} : Clock::now();
  std::this_thread::sleep_until(start);
  const double cpu0 = detail::process_cpu_seconds();
  const std::uint64_t rt0 = client.round_trips();
  const double subs0 = subscribes_of(client);
  go.store(true, std::memory_order_release);
  go.notify_all();
  std::this_thread::sleep_until(start + a.duration);
  stop.store(true, std::memory_order_relaxed);
  for (auto& t : threads) t.join();
  if (!told) return 4;
  if (!troubles.first_error.empty()) {
    std::cerr << "child " << a.impl << ": a waiter failed: " << troubles.first_error << "\n";
    return 5;
  }

  std::ostringstream out;
  out.precision(17);
  Clock::time_point last = start;
  for (auto t : left) last = std::max(last, t);
  out << "last_ns " << last.time_since_epoch().count() << "\n";
  out << "cpu_seconds " << detail::process_cpu_seconds() - cpu0 << "\n";
  out << "round_trips " << client.round_trips() - rt0 << "\n";
  out << "subscribes " << subscribes_of(client) - subs0 << "\n";
  out << "lost_leases " << troubles.lost.load() << "\n";
  out << "ops";
  for (auto k : ops) out << " " << k;
  out << "\nlatency_ms";
  out.precision(6);
  for (const auto& v : waits) {
    for (double ms : v) out << " " << ms;
  }
  out << "\n";
  std::cout << out.str() << std::flush;
  return 0;
}

// ----------------------------------------------------------------- the parent

// The child processes of one split point. The destructor SIGKILLs and reaps
// whatever is still running, so every way out of measure_split (results,
// a timeout, an exception) leaves no process behind.
class Children {
 public:
  struct Child {
    pid_t pid = -1;
    int to = -1;    // its stdin
    int from = -1;  // its stdout
    std::string out;
    bool eof = false;
  };

  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    for (auto& c : kids_) {
      close_fd(c.to);
      close_fd(c.from);
      if (c.pid > 0) {
        ::kill(c.pid, SIGKILL);
        int status = 0;
        ::waitpid(c.pid, &status, 0);
      }
    }
  }

  void spawn(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    Child c;
    c.to = in[1];
    c.from = out[0];
    posix_spawn_file_actions_t fa;
    ::posix_spawn_file_actions_init(&fa);
    // dup2 clears O_CLOEXEC on the copy: the child keeps exactly its stdin
    // and stdout ends; every other child's pipes close at exec.
    ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<std::string> a = args, e = env;
    std::vector<char*> argv, envp;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : e) envp.push_back(s.data());
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    ::posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      c.pid = -1;
      kids_.push_back(c);  // the destructor closes its ends
      throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(rc));
    }
    kids_.push_back(c);
  }

  // Reads every child's stdout until each has `enough(out)` or EOF, or the
  // deadline passes (returns false then).
  bool read_until(Clock::time_point deadline, const std::function<bool(const Child&)>& enough) {
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<Child*> who;
      for (auto& c : kids_) {
        if (!c.eof && !enough(c)) {
          fds.push_back({c.from, POLLIN, 0});
          who.push_back(&c);
        }
      }
      if (fds.empty()) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000)));
      if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
        if (got > 0) {
          who[i]->out.append(buf, static_cast<std::size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          who[i]->eof = true;
        }
      }
    }
  }

  // Writes `line` to every child's stdin and closes it.
  void tell_all(const std::string& line) {
    for (auto& c : kids_) {
      // SIGPIPE is ignored (main): a dead child shows as EPIPE here and as
      // a missing result later.
      (void)!::write(c.to, line.data(), line.size());
      close_fd(c.to);
    }
  }

  // Reaps every child (bounded: they have closed stdout, so they are
  // exiting); returns a description of the first abnormal exit, or "".
  std::string reap(Clock::time_point deadline) {
    std::string problem;
    for (auto& c : kids_) {
      int status = 0;
      pid_t r = 0;
      while ((r = ::waitpid(c.pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (r != c.pid) continue;  // still running: the destructor kills it
      c.pid = -1;
      if (problem.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        problem = WIFEXITED(status) ? "a child exited with status " + std::to_string(WEXITSTATUS(status))
                                    : "a child was killed by signal " + std::to_string(WTERMSIG(status));
      }
    }
    return problem;
  }

  std::vector<Child>& kids() { return kids_; }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  std::vector<Child> kids_;
};

struct ChildResult {
  std::int64_t last_ns = 0;
  double cpu_seconds = 0, round_trips = 0, subscribes = 0, lost_leases = 0;
  std::vector<std::uint64_t> ops;
  std::vector<double> latency_ms;
};

ChildResult parse_child(const std::string& text) {
  ChildResult r;
  std::istringstream in(text);
  bool have_ops = false, have_last = false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string kind;
    f >> kind;
    if (kind == "last_ns") {
      have_last = static_cast<bool>(f >> r.last_ns);
    } else if (kind == "cpu_seconds") {
      f >> r.cpu_seconds;
    } else if (kind == "round_trips") {
      f >> r.round_trips;
    } else if (kind == "subscribes") {
      f >> r.subscribes;
    } else if (kind == "lost_leases") {
      f >> r.lost_leases;
    } else if (kind == "ops") {
      for (std::uint64_t k; f >> k;) r.ops.push_back(k);
      have_ops = true;
    } else if (kind == "latency_ms") {
      for (double v; f >> v;) r.latency_ms.push_back(v);
    }
  }
  if (!have_ops || !have_last) throw std::runtime_error("a child printed no result (its error is in the log)");
  return r;
}

// The environment of a child: ours, with LOCKLAB_REDIS_URL naming the
// suite's server (a user's URL and LOCKLAB_REDIS_PASSWORD pass unchanged).
std::vector<std::string> child_environment(const Redis& r) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (r.server && std::strncmp(*e, "LOCKLAB_REDIS_URL=", 18) == 0) continue;
    env.emplace_back(*e);
  }
  if (r.server) env.push_back("LOCKLAB_REDIS_URL=" + r.server->url());
  return env;
}

ContentionResult measure_split(const Workload& w, const LockImpl& impl, int processes) {
  if (processes < 1 || w.waiters % processes != 0) {
    throw std::invalid_argument("split: waiters " + std::to_string(w.waiters) + " is not a multiple of processes " +
                                std::to_string(processes));
  }
  Redis& r = redis_instance();
  const int threads = w.waiters / processes;
  const std::vector<std::string> args = {self_path(), "--child=" + impl.name, "--key=" + fresh_name(impl.name),
                                         "--threads=" + std::to_string(threads),
                                         "--duration_ms=" + std::to_string(w.duration.count())};
  const std::vector<std::string> env = child_environment(r);
  Children kids;
  for (int p = 0; p < processes; ++p) kids.spawn(args, env);
  auto ready = [](const Children::Child& c) { return c.out.find("ready\n") != std::string::npos; };
  if (!kids.read_until(Clock::now() + std::chrono::seconds(20), ready)) {
    throw std::runtime_error("split: the children were not all ready within 20 s (killed)");
  }
  for (auto& c : kids.kids()) {
    if (!ready(c)) throw std::runtime_error("split: a child exited before it was ready (its error is in the log)");
    c.out.erase(0, c.out.find("ready\n") + 6);
  }
  auto [calls0, cpu0] = redis_server_counters(*r.probe);
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(5);
  kids.tell_all("go " + std::to_string(start.time_since_epoch().count()) + "\n");
  const Clock::time_point bound = start + w.duration + std::chrono::seconds(30);
  if (!kids.read_until(bound, [](const Children::Child&) { return false; })) {
    throw std::runtime_error("split: the children did not finish within the point's duration + 30 s (killed)");
  }
  const std::string problem = kids.reap(Clock::now() + std::chrono::seconds(5));
  if (!problem.empty()) throw std::runtime_error("split: " + problem + " (its error is in the log)");
  auto [calls1, cpu1] = redis_server_counters(*r.probe);

  ContentionResult result;
  result.workload = w;
  result.per_unit = "acquire";
  std::int64_t last = start.time_since_epoch().count();
  double round_trips = 0, subscribes = 0, lost_leases = 0;
  std::vector<double> latencies;
  for (auto& c : kids.kids()) {
    ChildResult x = parse_child(c.out);
    last = std::max(last, x.last_ns);
    result.cpu_seconds += x.cpu_seconds;
    round_trips += x.round_trips;
    subscribes += x.subscribes;
    lost_leases += x.lost_leases;
    result.ops_per_waiter.insert(result.ops_per_waiter.end(), x.ops.begin(), x.ops.end());
    latencies.insert(latencies.end(), x.latency_ms.begin(), x.latency_ms.end());
  }
  result.wall_seconds = static_cast<double>(last - start.time_since_epoch().count()) / 1e9;
  result.event_deltas = {{"round_trips", round_trips},
                         {"redis_cmds", calls1 - calls0},
                         {"server_cpu_us", (cpu1 - cpu0) * 1e6},
                         {"subscribes", subscribes},
                         {"lost_leases", lost_leases}};
  add_latencies(result, std::move(latencies));
  return result;
}

// One thread, nobody else: lock() then unlock() at once, `idle` apart.
// The latency is the pair's (call to lock() until unlock() returns), so two
// round trips and no waiting: the floor every curve point sits on.
//   idle_ms:0   warm: back to back, so the connection, the server and this
//               core never go quiet (the goal's "p50 <= 0.1 ms warm")
//   idle_ms:10  idle: 10 ms of sleep before each pair, long enough for the
//               VM's vCPU and redis-server to go back to sleep, so each pair
//               pays the wake-ups a lightly used lock really sees
// Points of their own, not the curve's waiters:1: the curve's 1 ms hold and
// think put a wake-up inside every acquisition and mix the two cases.
ContentionResult measure_uncontended(const Workload& w, const LockImpl& impl, std::chrono::milliseconds idle) {
  Redis& r = redis_instance();
  auto lock = impl.make(*r.client, fresh_name(impl.name));
  lock->lock();  // warm-up outside the window: SCRIPT LOAD, first connection
  lock->unlock();
  EventSource events = events_of(r);
  std::vector<double> pairs;
  pairs.reserve(4096);
  const EventCounts before = events();
  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  std::uint64_t n = 0;
  while (Clock::now() - start < w.duration) {
    if (idle.count() > 0) std::this_thread::sleep_for(idle);
    const auto t0 = Clock::now();
    lock->lock();
    lock->unlock();
    pairs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ++n;
  }
  ContentionResult result;
  result.workload = w;
  result.per_unit = "acquire";
  result.ops_per_waiter = {n};
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.cpu_seconds = detail::process_cpu_seconds() - cpu0;
  result.event_deltas = detail::subtract(events(), before);
  add_latencies(result, std::move(pairs));
  return result;
}

// ------------------------------------------------------ Redis Cluster scaling
//
// What a cluster buys a lock service: each master serves the slots it owns,
// so independent locks spread over M masters load each master with ~1/M of
// the commands, and the capacity the servers can give grows ~M-fold. The
// point runs `waiters` threads of this process, each looping lock / 1 ms
// hold / unlock / 1 ms think on a lock name of its own (keys = waiters:
// no contention at all), through one routing Client (Options::cluster) of a
// local cluster of M masters (LocalCluster: 1 or 3). Same client, same
// routing code on both: only the number of masters differs.
//
// What limits the raw rate, and so what the point reports besides it
// ------------------------------------------------------------------
// With 1 ms holds and 1 ms thinks a waiter can take at most ~470 locks/s,
// so 64 waiters offer at most ~30,000 acquisitions/s (2 round trips each).
// A PubSubLock acquisition + release costs one master 25-30 us of CPU
// (measured here: server_cpu_us_per_acquire on 1 master), so one master
// would be ~80% busy at that rate, and in the lab's runs it was 26-37% busy:
// the single master is not the bottleneck at 64 keys. What is: the client,
// whose 64 threads need CPU for each of their ~60,000 round trips a second,
// on a machine with fewer cores than masters + client (the lab's has 2).
// Every master and every client thread share the same 2 cores, so the
// acquisitions/s measure the machine, not the masters: going from 1 to 3
// masters cannot make 2 cores do more work.
// So the point also measures each master's share, from its own INFO
// (commandstats, used_cpu_user + used_cpu_sys) before and after the run:
//   busiest_master_cmd_share    commands of the busiest master / all
//                               commands (1.0 on one master; ~0.33 when 3
//                               masters share the load evenly)
//   busiest_master_cpu_us_per_acquire   that master's CPU per acquisition
//   server_capacity_per_s       acquisitions / the busiest master's CPU
//                               seconds: the rate at which the busiest
//                               master would be 100% busy, i.e. what the
//                               cluster could serve with a core per master
//                               and clients that are not the bottleneck
// The 3-master / 1-master ratio of server_capacity_per_s is the scaling the
// masters give (goal >= 2.5x); the ratio of items_per_second is what this
// machine shows, and on 2 cores it stays near 1. Each release's wake-up is
// a sharded SPUBLISH on a cluster (publishing_script.hpp), paid for by the
// lock's own master only; with the classic PUBLISH it replaced, the cluster
// bus made every master pay for every release (distributed/README.md has
// the figures before and after).
struct ClusterBench {
  std::unique_ptr<redis::LocalCluster> cluster;
  std::vector<std::unique_ptr<Client>> probes;  // INFO of each master, standalone
};

// The 1- and 3-master clusters, started together on first use (from main's
// thread): their ~2 s start-up waits overlap.
ClusterBench& cluster_bench(int masters) {
  static std::vector<ClusterBench> benches = [] {
    std::vector<ClusterBench> b(2);
    b[0].cluster = std::make_unique<redis::LocalCluster>(1, std::chrono::seconds(20), false);
    b[1].cluster = std::make_unique<redis::LocalCluster>(3, std::chrono::seconds(20), false);
    for (auto& x : b) {
      x.cluster->wait_until_ok(std::chrono::seconds(20));
      for (int i = 0; i < x.cluster->size(); ++i) x.probes.push_back(std::make_unique<Client>(x.cluster->client_options(i)));
    }
    return b;
  }();
  if (masters != 1 && masters != 3) throw std::invalid_argument("cluster points: 1 or 3 masters");
  return benches[masters == 1 ? 0 : 1];
}

ContentionResult measure_cluster(const Workload& w, const LockImpl& impl, int masters) {
  ClusterBench& b = cluster_bench(masters);
  Client::Options o = b.cluster->cluster_options();
  size_client(o);
  Client client(o);
  std::vector<std::unique_ptr<AnyLock>> locks;
  const std::string base = fresh_name(impl.name);
  for (int i = 0; i < w.waiters; ++i) {
    locks.push_back(impl.make(client, base + ":key" + std::to_string(i)));
    locks.back()->lock();  // warm-up outside the window: SCRIPT LOAD on each master, connections
    locks.back()->unlock();
  }
  auto snapshot = [&] {
    std::vector<std::pair<double, double>> per_master;
    for (auto& p : b.probes) per_master.push_back(redis_server_counters(*p));
    return per_master;
  };
  EventSource events = [&] {
    double calls = 0, cpu = 0;
    for (const auto& [c, u] : snapshot()) {
      calls += c;
      cpu += u;
    }
    return EventCounts{{"round_trips", static_cast<double>(client.round_trips())},
                       {"redis_cmds", calls},
                       {"server_cpu_us", cpu * 1e6}};
  };
  std::vector<std::vector<double>> waits(static_cast<std::size_t>(w.waiters));
  WaiterTroubles troubles;
  const auto before = snapshot();
  ContentionResult result = run_contention(
      w,
      [&](int i) {
        const auto k = static_cast<std::size_t>(i);
        timed_acquisition(*locks[k], kHold, kThink, waits[k], troubles);
      },
      events);
  const auto after = snapshot();
  troubles.rethrow();
  result.per_unit = "acquire";
  result.event_deltas.emplace_back("lost_leases", static_cast<double>(troubles.lost.load()));
  // Each master's share (the probes' own INFO calls are subtracted by
  // redis_server_counters; the events' snapshots inside the window are 4 INFO
  // calls per master, negligible next to ~10^4 lock commands).
  double all_cmds = 0, top_cmds = 0, top_cpu = 0;
  for (std::size_t m = 0; m < after.size(); ++m) {
    const double cmds = after[m].first - before[m].first;
    const double cpu = after[m].second - before[m].second;
    all_cmds += cmds;
    if (cmds > top_cmds) top_cmds = cmds;
    if (cpu > top_cpu) top_cpu = cpu;
  }
  double acquisitions = 0;
  for (auto n : result.ops_per_waiter) acquisitions += static_cast<double>(n);
  result.extra.emplace_back("masters", static_cast<double>(masters));
  result.extra.emplace_back("busiest_master_cmd_share", all_cmds > 0 ? top_cmds / all_cmds : 0.0);
  result.extra.emplace_back("busiest_master_cpu_us_per_acquire", acquisitions > 0 ? top_cpu * 1e6 / acquisitions : 0.0);
  result.extra.emplace_back("server_capacity_per_s", top_cpu > 0 ? acquisitions / top_cpu : 0.0);
  std::vector<double> all;
  for (auto& v : waits) all.insert(all.end(), v.begin(), v.end());
  add_latencies(result, std::move(all));
  return result;
}

// 64 waiters on 64 keys: the goal's setting, in every mode (two points of
// 200 ms quick, 1 s full, plus the clusters' one ~2 s start).
void register_cluster_points(const SuiteOptions& o) {
  constexpr int kKeys = 64;
  const LockImpl* li = &find_impl("PubSubLock");
  for (const int masters : {1, 3}) {
    Workload w{.waiters = kKeys, .duration = o.duration};
    register_point(point_name(o.suite, li->name, kKeys,
                              {{"hold_us", static_cast<std::int64_t>(kHold.count())}, {"keys", kKeys}, {"masters", masters}}),
                   w, [li, masters](const Workload& wl) { return measure_cluster(wl, *li, masters); });
  }
}

// ------------------------------------------------------------- registration

struct Split {
  int processes, threads;
};

// "1x16,4x4,16x1" -> {{1,16},{4,4},{16,1}}.
std::vector<Split> parse_splits(const std::string& text) {
  std::vector<Split> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto x = item.find('x');
    if (x == std::string::npos) throw std::invalid_argument("--split: expected PxT items like 4x4, got '" + item + "'");
    out.push_back({parse_positive(item.substr(0, x), "--split processes"),
                   parse_positive(item.substr(x + 1), "--split threads")});
  }
  if (out.empty()) throw std::invalid_argument("--split: empty list");
  return out;
}

void register_impl(const SuiteOptions& o, const LockImpl& impl, const std::vector<Split>& splits) {
  const auto hold_us = static_cast<std::int64_t>(kHold.count());
  const LockImpl* li = &impl;  // lock_impls() is a static: it outlives the run
  for (int waiters : o.waiters) {
    Workload w{.waiters = waiters, .duration = o.duration};
    register_point(point_name(o.suite, impl.name, waiters, {{"hold_us", hold_us}}), w,
                   [li](const Workload& wl) { return measure_curve(wl, *li); });
  }
  for (const Split& s : splits) {
    Workload w{.waiters = s.processes * s.threads, .duration = o.duration};
    register_point(point_name(o.suite, impl.name, w.waiters, {{"hold_us", hold_us}, {"processes", s.processes}}), w,
                   [li, p = s.processes](const Workload& wl) { return measure_split(wl, *li, p); });
  }
  Workload h{.waiters = 1, .duration = o.duration};
  register_point(point_name(o.suite, impl.name, 1, {{"hold_us", hold_us}, {"handoff", 1}}), h,
                 [li](const Workload& wl) { return measure_handoff(wl, *li); });
  for (const int idle_ms : {0, 10}) {
    register_point(point_name(o.suite, impl.name, 1, {{"hold_us", 0}, {"idle_ms", idle_ms}}), h,
                   [li, idle = std::chrono::milliseconds(idle_ms)](const Workload& wl) {
                     return measure_uncontended(wl, *li, idle);
                   });
  }
}

}  // namespace
}  // namespace locklab::bench

int main(int argc, char** argv) {
  using namespace locklab::bench;
  // A child that died shows as EPIPE when the parent writes "go", not as
  // the death of the whole suite.
  ::signal(SIGPIPE, SIG_IGN);
  // Sleep for the hold we name: Linux lets a sleep overrun by the thread's
  // timer slack (50 us by default) so that it can batch wake-ups, and a
  // "1 ms" hold then lasts 1.12 ms (sleep_for(1ms), 500 sleeps on the lab
  // VM: p50 1,124 us with the default slack, 1,072 us with 1 ns). That
  // would charge every lock ~5% of lock utilisation for the kernel's
  // convenience. Threads inherit the value, and split children run this
  // main too. The Python peer does the same (benches/peers/redis_py_lock.py).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::vector<std::string> args(argv, argv + argc);
  try {
    // --list_locks: the implementation names, one a line, in plot order (what
    // the plotting module's tests compare with benches/redis_locks.json).
    if (std::find(args.begin(), args.end(), "--list_locks") != args.end()) {
      for (const auto& impl : lock_impls()) std::cout << impl.name << "\n";
      return 0;
    }
    const std::string child = take_flag(args, "--child");
    if (!child.empty()) {
      ChildArgs a;
      a.impl = child;
      a.key = take_flag(args, "--key");
      const std::string threads = take_flag(args, "--threads");
      const std::string ms = take_flag(args, "--duration_ms");
      if (a.key.empty() || threads.empty() || ms.empty()) {
        throw std::invalid_argument("--child needs --key, --threads and --duration_ms");
      }
      a.threads = parse_positive(threads, "--threads");
      a.duration = std::chrono::milliseconds(parse_positive(ms, "--duration_ms"));
      return child_main(a);
    }
    const std::string split_text = take_flag(args, "--split");
    std::optional<std::vector<Split>> splits;
    if (!split_text.empty()) splits = parse_splits(split_text);
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    return suite_main(kSuite, static_cast<int>(cargs.size()), cargs.data(), [&](const SuiteOptions& o) {
      const std::vector<Split> chosen =
          splits ? *splits : (o.mode == "full" ? std::vector<Split>{{1, 50}, {5, 10}, {50, 1}}
                                               : std::vector<Split>{{1, 16}, {4, 4}, {16, 1}});
      for (const auto& impl : lock_impls()) register_impl(o, impl, chosen);
      register_cluster_points(o);
      register_watchdog_and_async_points(o, [] { return redis_instance().options; });
    });
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}
