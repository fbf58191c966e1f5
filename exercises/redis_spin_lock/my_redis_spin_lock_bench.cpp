// my_redis_spin_lock_bench.cpp — your Redis lock on the `redis_locks`
// suite's curve workload, as `my.RedisSpinLock`: N waiter threads share one
// lock and one Client; each loops lock(), hold 1 ms (a sleep: a distributed
// critical section waits on I/O), unlock(), think 1 ms. Same point names as
// benches/redis_locks_bench.cpp (`redis_locks/<Impl>/waiters:N/hold_us:1000`),
// so ./lab plot draws it beside SpinLock (50 ms polls) and PubSubLock; with
// your 2 ms polls, where do you expect it? Counters: acquire latency
// (p50_ms, p95_ms, p99_ms) and round_trips_per_acquire: the price of polling.
// Its own redis-server on 127.0.0.1 (or $LOCKLAB_REDIS_URL).
// exercises/check.sh redis_spin_lock --bench writes results/exercise_redis_spin_lock.json.
#include <my_redis_spin_lock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benches/harness/suite.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"

namespace {

using namespace locklab;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::microseconds kHold{1'000};
constexpr std::chrono::microseconds kThink{1'000};

redis::Client& bench_client() {
  struct Shared {
    std::unique_ptr<redis::EmbeddedServer> server;
    std::unique_ptr<redis::Client> client;
  };
  static Shared s = [] {
    Shared x;
    redis::Client::Options o;
    if (auto env = redis::Client::Options::from_env()) {
      o = *env;
    } else {
      x.server = std::make_unique<redis::EmbeddedServer>();
      o = x.server->client_options();
    }
    o.command_timeout = std::chrono::seconds(10);
    o.max_connections = std::max<std::size_t>(o.max_connections, 256);
    x.client = std::make_unique<redis::Client>(o);
    return x;
  }();
  return *s.client;
}

bench::ContentionResult measure(const bench::Workload& w) {
  static std::atomic<int> n{0};
  redis::Client& client = bench_client();
  exercises::MyRedisSpinLock lock(client, "locklab:bench:my.RedisSpinLock:" + std::to_string(n.fetch_add(1)));
  std::vector<std::vector<double>> waits(static_cast<std::size_t>(w.waiters));
  bench::ContentionResult r = bench::run_contention(
      w,
      [&](int i) {
        const auto start = Clock::now();
        lock.lock();
        waits[static_cast<std::size_t>(i)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        std::this_thread::sleep_for(kHold);
        lock.unlock();
        std::this_thread::sleep_for(kThink);
      },
      [&client] { return bench::EventCounts{{"round_trips", static_cast<double>(client.round_trips())}}; });
  r.per_unit = "acquire";
  std::vector<double> all;
  for (auto& v : waits) all.insert(all.end(), v.begin(), v.end());
  if (!all.empty()) {
    std::sort(all.begin(), all.end());
    auto pct = [&](double p) { return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))]; };
    r.extra.emplace_back("p50_ms", pct(0.50));
    r.extra.emplace_back("p95_ms", pct(0.95));
    r.extra.emplace_back("p99_ms", pct(0.99));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::suite_main("redis_locks", argc, argv, [](const bench::SuiteOptions& o) {
    for (int waiters : o.waiters) {
      bench::Workload w{.waiters = waiters, .duration = o.duration};
      bench::register_point(bench::point_name(o.suite, "my.RedisSpinLock", waiters, {{"hold_us", kHold.count()}}), w,
                            measure);
    }
  });
}
