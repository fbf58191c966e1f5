// redis_locks_watchdog.cpp — the watchdog and try_lock_async points of the
// redis_locks suite; what each measures and why: redis_locks_watchdog.hpp.
#include "benches/redis_locks_watchdog.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "benches/harness/busy_work.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/pub_sub_lock.hpp"

namespace locklab::bench {
namespace {

using Clock = std::chrono::steady_clock;
using redis::Client;
using redis::PubSubLock;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kLease{600};      // watchdog_lease, or the fixed lease
constexpr std::chrono::milliseconds kStall{1'200};    // the holder's stall: twice the lease
constexpr std::chrono::milliseconds kWritePause{300};  // > one renewal period, < two
constexpr std::chrono::milliseconds kAsyncLease{10'000};
constexpr int kRounds = 5;                // per async point; 3 for key_deleted
constexpr auto kVerdictLimit = 2s;        // a verdict that does not come fails the point
constexpr auto kFutureLimit = 5s;         // so does a future that does not complete

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string fresh_name(const char* part) {
  static std::atomic<int> n{0};
  return std::string("locklab:bench:") + part + ":" + std::to_string(::getpid()) + ":" + std::to_string(n++);
}

double risk_kind(const std::optional<PubSubLock::LeaseRisk>& r) {
  if (!r) return 0;
  return r->kind == PubSubLock::LeaseRisk::Kind::kRenewalFailed ? 1 : 2;
}

// One point's result: `rounds` acquisitions by one waiter, the counters as
// they are (ContentionResult::extra).
ContentionResult result_of(const Workload& w, int rounds, Clock::time_point start, double cpu0,
                           EventCounts counters) {
  ContentionResult r;
  r.workload = w;
  r.per_unit = "acquire";
  r.ops_per_waiter = {static_cast<std::uint64_t>(rounds)};
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu_seconds = detail::process_cpu_seconds() - cpu0;
  r.extra = std::move(counters);
  return r;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What on_lease_risk was told, and when (it runs on the Client's renewal
// timer thread: it only records, under a mutex, and notifies).
class VerdictLog {
 public:
  std::function<void(const PubSubLock::LeaseRisk&)> callback() {
    return [this](const PubSubLock::LeaseRisk& r) {
      std::lock_guard g(mu_);
      told_.emplace_back(r.kind, Clock::now());
      cv_.notify_all();
    };
  }
  // The time of the first verdict `kind` after `since`; throws after kVerdictLimit.
  Clock::time_point wait_for(PubSubLock::LeaseRisk::Kind kind, const char* what) {
    std::unique_lock g(mu_);
    auto found = [&]() -> std::optional<Clock::time_point> {
      for (const auto& [k, t] : told_) {
        if (k == kind) return t;
      }
      return std::nullopt;
    };
    if (!cv_.wait_for(g, kVerdictLimit, [&] { return found().has_value(); })) {
      throw std::runtime_error(std::string("no ") + what + " verdict within 2 s");
    }
    return *found();
  }
  std::size_t count() {
    std::lock_guard g(mu_);
    return told_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<PubSubLock::LeaseRisk::Kind, Clock::time_point>> told_;
};

// unlock(): 1 if it threw LockLost, 0 if it returned.
double unlock_lost(PubSubLock& lock) {
  try {
    lock.unlock();
    return 0;
  } catch (const redis::LockLost&) {
    return 1;
  }
}

// ------------------------------------------------------------------ watchdog

// The holder's thread stalls twice its lease; a rival on another Client
// tries every 10 ms.
ContentionResult measure_stall(const Workload& w, const Client::Options& server, bool watchdog) {
  Client holder_client(server), rival_client(server);
  PubSubLock::Options o;
  if (watchdog) {
    o.watchdog_lease = kLease;
  } else {
    o.lease = kLease;
  }
  const std::string name = fresh_name("stall");
  PubSubLock lock(holder_client, name, o);
  PubSubLock::Options ro;
  ro.lease = 10s;
  PubSubLock rival(rival_client, name, ro);
  lock.lock();  // warm-up outside the window: SCRIPT LOADs (the renewal's too), first connections
  if (watchdog) std::this_thread::sleep_for(kLease / 3 + 50ms);
  lock.unlock();
  rival.lock();
  rival.unlock();

  const double cpu0 = detail::process_cpu_seconds();
  const std::uint64_t rt0 = holder_client.round_trips(), renewals0 = lock.watchdog_renewals();
  const auto start = Clock::now();
  lock.lock();
  const auto held = Clock::now();
  std::optional<Clock::time_point> rival_got;
  std::promise<void> holder_done;
  std::thread rival_thread([&, done = holder_done.get_future()] {
    while (Clock::now() - held < kStall) {
      if (rival.try_lock()) {
        rival_got = Clock::now();
        done.wait();  // it keeps the lock until the holder has unlocked
        rival.unlock();
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  std::this_thread::sleep_for(kStall);  // the stall: a slow call, a blocked write
  const double kind = risk_kind(lock.lease_risk());
  const double lost = unlock_lost(lock);
  const double held_s = std::chrono::duration<double>(Clock::now() - held).count();
  holder_done.set_value();
  rival_thread.join();
  const double renewals = static_cast<double>(lock.watchdog_renewals() - renewals0);
  const double rts = static_cast<double>(holder_client.round_trips() - rt0);
  EventCounts c{{"renewals", renewals},
                {"renewals_per_held_s", renewals / held_s},
                {"holder_round_trips_per_held_s", rts / held_s},
                {"rival_acquired", rival_got ? 1.0 : 0.0},
                {"lock_lost", lost},
                {"lease_risk_kind", kind}};
  if (rival_got) c.emplace_back("rival_acquired_after_ms", ms_between(held, *rival_got));
  return result_of(w, 1, start, cpu0, std::move(c));
}

// The key is deleted under a watchdog-mode holder, between two renewals.
ContentionResult measure_key_deleted(const Workload& w, const Client::Options& server) {
  constexpr int kDeleteRounds = 3;
  Client holder_client(server), probe(server);
  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  std::vector<double> after, kinds, lost;
  for (int i = 0; i < kDeleteRounds; ++i) {
    VerdictLog log;
    PubSubLock::Options o;
    o.watchdog_lease = kLease;
    o.on_lease_risk = log.callback();
    const std::string name = fresh_name("deleted");
    PubSubLock lock(holder_client, name, o);
    lock.lock();
    // Different phases against the 200 ms renewal period: 250, 300, 350 ms.
    std::this_thread::sleep_for(kLease / 3 + 50ms * (i + 1));
    const auto deleted = Clock::now();
    (void)probe.command({"DEL", name});
    const auto told = log.wait_for(PubSubLock::LeaseRisk::Kind::kLost, "kLost");
    after.push_back(ms_between(deleted, told));
    kinds.push_back(risk_kind(lock.lease_risk()));
    lost.push_back(unlock_lost(lock));
  }
  return result_of(w, kDeleteRounds, start, cpu0,
                   {{"verdict_after_ms", mean(after)},
                    {"verdict_after_worst_ms", max_of(after)},
                    {"lease_risk_kind", mean(kinds)},
                    {"lock_lost", mean(lost)}});
}

// CLIENT PAUSE WRITE just after a renewal: the next renewal times out.
ContentionResult measure_write_pause(const Workload& w, const Client::Options& server) {
  Client::Options short_timeout = server;
  short_timeout.command_timeout = 50ms;  // the renewal gives up inside the pause
  Client holder_client(short_timeout), probe(server);
  VerdictLog log;
  PubSubLock::Options o;
  o.watchdog_lease = kLease;
  o.on_lease_risk = log.callback();
  PubSubLock lock(holder_client, fresh_name("paused"), o);
  lock.lock();  // warm-up
  lock.unlock();

  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  lock.lock();
  // Start the pause right after a renewal, so the one due inside it is the
  // only one the pause can catch and the next lands before the lease ends.
  const std::uint64_t r0 = lock.watchdog_renewals();
  const auto limit = Clock::now() + kVerdictLimit;
  while (lock.watchdog_renewals() == r0) {
    if (Clock::now() > limit) throw std::runtime_error("no watchdog renewal within 2 s");
    std::this_thread::sleep_for(1ms);
  }
  const auto paused = Clock::now();
  (void)probe.command({"CLIENT", "PAUSE", std::to_string(kWritePause.count()), "WRITE"});
  const auto told = log.wait_for(PubSubLock::LeaseRisk::Kind::kRenewalFailed, "kRenewalFailed");
  // Past the pause and the renewal after it.
  std::this_thread::sleep_until(paused + kWritePause + kLease / 3);
  const double renewed_after = static_cast<double>(lock.watchdog_renewals() - r0 - 1);
  const double kind = risk_kind(lock.lease_risk());
  const double lost = unlock_lost(lock);
  return result_of(w, 1, start, cpu0,
                   {{"verdict_after_ms", ms_between(paused, told)},
                    {"renewals_after_failure", renewed_after},
                    {"failed_renewals", static_cast<double>(lock.failed_renewals())},
                    {"lease_risk_kind", kind},
                    {"lock_lost", lost}});
}

// ------------------------------------------------------------- try_lock_async

// A holder thread on its own lock object (same name, same Client): on each
// hold(d) it takes the lock, reports, keeps it `d`, releases.
class Holder {
 public:
  Holder(Client& client, const std::string& name) : lock_(client, name, leased()) {}
  ~Holder() {
    if (thread_.joinable()) thread_.join();
  }
  // Returns once the holder owns the lock; it releases `d` later.
  void hold(std::chrono::milliseconds d) {
    if (thread_.joinable()) thread_.join();
    std::promise<void> held;
    auto f = held.get_future();
    thread_ = std::thread([this, d, p = std::move(held)]() mutable {
      lock_.lock();
      released_ = Clock::time_point{};
      p.set_value();
      std::this_thread::sleep_for(d);
      released_ = Clock::now();  // just before the release: the wait ends after it
      lock_.unlock();
    });
    f.get();
  }
  // The time of the last release (after the holder thread finished).
  Clock::time_point released() {
    if (thread_.joinable()) thread_.join();
    return released_;
  }
  static PubSubLock::Options leased() {
    PubSubLock::Options o;
    o.lease = kAsyncLease;
    return o;
  }

 private:
  PubSubLock lock_;
  std::thread thread_;
  Clock::time_point released_;
};

// One async point's setup: a Client, a holder on its own lock object, and
// the caller's lock object on the same name, warmed up outside the window
// (the scripts, the subscription path, the async worker); then the clocks.
struct AsyncSetup {
  AsyncSetup(const Client::Options& server, const char* part)
      : client(server), name(fresh_name(part)), holder(client, name), lock(client, name, Holder::leased()) {
    lock.lock();
    lock.unlock();
    if (lock.try_lock_async(1s, kAsyncLease).get()) lock.unlock();
    cpu0 = detail::process_cpu_seconds();
    start = Clock::now();
  }
  Client client;
  std::string name;
  Holder holder;  // after client, name: destroyed (joined) before them
  PubSubLock lock;
  double cpu0 = 0;
  Clock::time_point start;
};

void ready_within(std::future<bool>& f) {
  if (f.wait_for(kFutureLimit) != std::future_status::ready) {
    throw std::runtime_error("a try_lock_async future did not complete within 5 s");
  }
}

// Spins until this thread has used `cpu` of CPU time (its own clock): work
// of one size whatever else the machine runs. A wall-clock deadline would
// shrink the work when the thread is preempted, and shrink it differently
// for one 30 ms piece than for thirty 1 ms pieces.
void cpu_work(std::chrono::nanoseconds cpu) {
  auto used = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  const auto end = used() + cpu;
  while (used() < end) BusyWork::spin_iterations(1'000);
}

// The caller needs the lock (held `hold` more) and has `work` of CPU work,
// done 1 ms of CPU at a time (the async caller checks its future between).
ContentionResult measure_overlap(const Workload& w, const Client::Options& server, bool async,
                                 std::chrono::milliseconds hold, std::chrono::milliseconds work) {
  AsyncSetup x(server, async ? "async" : "blocking");
  Holder& holder = x.holder;
  PubSubLock& lock = x.lock;
  std::vector<double> call_us, wait_ms, work_ms, total_ms;
  for (int i = 0; i < kRounds; ++i) {
    holder.hold(hold);
    const auto t0 = Clock::now();
    Clock::time_point ready{}, worked{};
    if (async) {
      std::future<bool> f = lock.try_lock_async(kFutureLimit, kAsyncLease);
      call_us.push_back(ms_between(t0, Clock::now()) * 1000);
      for (auto done = 0ms; done < work; done += 1ms) {
        cpu_work(1ms);
        if (ready == Clock::time_point{} && f.wait_for(0s) == std::future_status::ready) ready = Clock::now();
      }
      worked = Clock::now();
      ready_within(f);
      if (ready == Clock::time_point{}) ready = Clock::now();
      if (!f.get()) throw std::runtime_error("try_lock_async: no lock within 5 s");
    } else {
      lock.lock();
      ready = Clock::now();
      call_us.push_back(ms_between(t0, ready) * 1000);
      for (auto done = 0ms; done < work; done += 1ms) cpu_work(1ms);
      worked = Clock::now();
    }
    const auto end = Clock::now();
    lock.unlock();
    wait_ms.push_back(ms_between(t0, ready));
    work_ms.push_back(ms_between(async ? t0 : ready, worked));
    total_ms.push_back(ms_between(t0, end));
    (void)holder.released();
  }
  const double wait = mean(wait_ms), worked = mean(work_ms), total = mean(total_ms);
  return result_of(w, kRounds, x.start, x.cpu0,
                   {{"call_us", median(call_us)},
                    {"waited_ms", wait},
                    {"worked_ms", worked},
                    {"total_ms", total},
                    {"hidden_wait_ms", wait + worked - total},
                    {"acquired", 1}});
}

// A wait shorter than the hold: the future is false, no earlier than the wait.
ContentionResult measure_timeout(const Workload& w, const Client::Options& server, std::chrono::milliseconds hold,
                                 std::chrono::milliseconds wait) {
  AsyncSetup x(server, "async_timeout");
  std::vector<double> after, acquired;
  for (int i = 0; i < kRounds; ++i) {
    x.holder.hold(hold);
    const auto t0 = Clock::now();
    std::future<bool> f = x.lock.try_lock_async(wait, kAsyncLease);
    ready_within(f);
    after.push_back(ms_between(t0, Clock::now()));
    const bool got = f.get();
    acquired.push_back(got ? 1 : 0);
    if (got) x.lock.unlock();
    (void)x.holder.released();
  }
  return result_of(w, kRounds, x.start, x.cpu0,
                   {{"completed_after_ms", mean(after)},
                    {"completed_after_earliest_ms", *std::min_element(after.begin(), after.end())},
                    {"completed_after_latest_ms", max_of(after)},
                    {"acquired", mean(acquired)}});
}

// The caller's lock object is destroyed while its request is pending.
ContentionResult measure_destroyed(const Workload& w, const Client::Options& server, std::chrono::milliseconds hold,
                                   std::chrono::milliseconds destroy_after) {
  Client client(server);
  const std::string name = fresh_name("async_destroyed");
  Holder holder(client, name);
  const double cpu0 = detail::process_cpu_seconds();
  const auto start = Clock::now();
  std::vector<double> after, acquired;
  for (int i = 0; i < kRounds; ++i) {
    auto lock = std::make_unique<PubSubLock>(client, name, Holder::leased());
    holder.hold(hold);
    std::future<bool> f = lock->try_lock_async(kFutureLimit, kAsyncLease);
    std::this_thread::sleep_for(destroy_after);
    const auto destroyed = Clock::now();
    lock.reset();  // ~PubSubLock: pending requests complete with false
    ready_within(f);
    after.push_back(ms_between(destroyed, Clock::now()));
    acquired.push_back(f.get() ? 1 : 0);
    (void)holder.released();
  }
  return result_of(w, kRounds, start, cpu0,
                   {{"completed_after_ms", mean(after)},
                    {"completed_after_latest_ms", max_of(after)},
                    {"acquired", mean(acquired)}});
}

// The caller drops the future; the request goes on, and the lock is the
// calling thread's once the holder releases it.
ContentionResult measure_abandoned(const Workload& w, const Client::Options& server, std::chrono::milliseconds hold) {
  AsyncSetup x(server, "async_abandoned");
  std::vector<double> held, after;
  for (int i = 0; i < kRounds; ++i) {
    x.holder.hold(hold);
    (void)x.lock.try_lock_async(kFutureLimit, kAsyncLease);  // the future is dropped at once
    const auto released = x.holder.released();
    const auto limit = Clock::now() + kFutureLimit;
    while (x.lock.hold_count() == 0 && Clock::now() < limit) std::this_thread::sleep_for(1ms);
    const bool mine = x.lock.hold_count() > 0;
    held.push_back(mine ? 1 : 0);
    if (mine) {
      after.push_back(ms_between(released, Clock::now()));
      x.lock.unlock();  // the calling thread owns it: it must unlock
    }
  }
  EventCounts c{{"held_after_abandon", mean(held)}};
  if (!after.empty()) c.emplace_back("held_after_ms", mean(after));
  return result_of(w, kRounds, x.start, x.cpu0, std::move(c));
}

}  // namespace

void register_watchdog_and_async_points(const SuiteOptions& o, std::function<Client::Options()> server) {
  const Workload one{.waiters = 1, .duration = o.duration};
  const auto lease = static_cast<std::int64_t>(kLease.count());
  auto add = [&](const std::string& impl, std::vector<Knob> knobs,
                 std::function<ContentionResult(const Workload&, const Client::Options&)> measure) {
    register_point(point_name(o.suite, impl, 1, knobs), one,
                   [server, measure](const Workload& w) { return measure(w, server()); });
  };
  for (const bool watchdog : {true, false}) {
    add(watchdog ? "PubSubLock(watchdog)" : "PubSubLock(fixed-lease)",
        {{"lease_ms", lease}, {"stall_ms", static_cast<std::int64_t>(kStall.count())}},
        [watchdog](const Workload& w, const Client::Options& s) { return measure_stall(w, s, watchdog); });
  }
  add("PubSubLock(watchdog)", {{"lease_ms", lease}, {"key_deleted", 1}}, measure_key_deleted);
  add("PubSubLock(watchdog)", {{"lease_ms", lease}, {"write_pause_ms", static_cast<std::int64_t>(kWritePause.count())}},
      measure_write_pause);
  for (const bool async : {false, true}) {
    add(async ? "PubSubLock(try_lock_async)" : "PubSubLock(lock)", {{"hold_ms", 40}, {"work_ms", 30}},
        [async](const Workload& w, const Client::Options& s) { return measure_overlap(w, s, async, 40ms, 30ms); });
  }
  add("PubSubLock(try_lock_async)", {{"hold_ms", 100}, {"wait_ms", 20}},
      [](const Workload& w, const Client::Options& s) { return measure_timeout(w, s, 100ms, 20ms); });
  add("PubSubLock(try_lock_async)", {{"hold_ms", 100}, {"destroyed_after_ms", 20}},
      [](const Workload& w, const Client::Options& s) { return measure_destroyed(w, s, 100ms, 20ms); });
  add("PubSubLock(try_lock_async)", {{"hold_ms", 40}, {"abandoned", 1}},
      [](const Workload& w, const Client::Options& s) { return measure_abandoned(w, s, 40ms); });
}

}  // namespace locklab::bench
