#include "distributed/guarded_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/permit_semaphore.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using Guarded = GuardedLock<PermitSemaphore>;

// INCR the in-flight counter KEYS[1] and raise the high-water mark KEYS[2]:
// counted by Redis itself, so it sees every process.
constexpr const char* kEnterScript = R"lua(
local n = redis.call('INCR', KEYS[1])
local m = tonumber(redis.call('GET', KEYS[2]) or '0')
if n > m then redis.call('SET', KEYS[2], n) end
return n
)lua";

// The PermitSemaphore adapter, with every distributed acquire counted in
// Redis (in flight now, and the most ever in flight) and every
// initialisation counted here.
struct CountingTraits : GuardTraits<PermitSemaphore> {
  Client* client = nullptr;
  std::string in_flight, high_water;
  std::shared_ptr<std::atomic<int>> inits = std::make_shared<std::atomic<int>>(0);

  std::optional<std::string> acquire(PermitSemaphore& s, detail::Clock::time_point deadline) {
    client->command({"EVAL", kEnterScript, "2", in_flight, high_water});
    struct Leave {
      CountingTraits& t;
      ~Leave() {
        try {
          t.client->command({"DECR", t.in_flight});
        } catch (...) {
          ADD_FAILURE() << "DECR failed";
        }
      }
    } leave{*this};
    // Stay a moment at "Redis", so overlapping waiters would be seen.
    std::this_thread::sleep_for(1ms);
    return GuardTraits<PermitSemaphore>::acquire(s, deadline);
  }
  void initialise(PermitSemaphore& s) {
    inits->fetch_add(1);
    GuardTraits<PermitSemaphore>::initialise(s);
  }
};

GuardedLock<PermitSemaphore, CountingTraits>::Factory semaphores(Client& c) {
  return [&c](const std::string& key) { return std::make_unique<PermitSemaphore>(c, key); };
}

CountingTraits counting(Client& c, const std::string& prefix) {
  CountingTraits t;
  t.client = &c;
  t.in_flight = prefix + ":in_flight";
  t.high_water = prefix + ":high_water";
  t.lease = 10s;
  return t;
}

std::int64_t get_int(Client& c, const std::string& key) {
  Reply r = c.command({"GET", key});
  return r.is_nil() ? 0 : std::stoll(r.as_string());
}

// `threads` threads each take the guarded semaphore `rounds` times, hold it
// 1 ms. Returns the number of acquisitions.
template <class G>
int hammer(G& guarded, const std::string& key, int threads, int rounds) {
  std::atomic<int> got{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        auto g = guarded.try_acquire(key, 20s);
        if (!g) {
          ADD_FAILURE() << "not acquired within 20 s";
          return;
        }
        std::this_thread::sleep_for(1ms);
        g.release();
        got.fetch_add(1);
      }
    });
  }
  for (auto& t : ts) t.join();
  return got.load();
}

using GuardedLockTest = RedisTest;

TEST_F(GuardedLockTest, NeverMoreThanOneWaiterOfTheProcessReachesRedis) {
  GuardedLock<PermitSemaphore, CountingTraits> guarded(semaphores(client()), {}, counting(client(), key("count")));
  EXPECT_EQ(hammer(guarded, key(), 12, 8), 12 * 8);
  EXPECT_EQ(get_int(client(), key("count") + ":high_water"), 1) << "Redis saw two waiters of one process at once";
  EXPECT_EQ(get_int(client(), key("count") + ":in_flight"), 0);
  const auto c = guarded.counters();
  EXPECT_EQ(c.acquisitions, 12u * 8u);
  EXPECT_EQ(c.redis_attempts, 12u * 8u) << "one distributed acquire per local permit";
  EXPECT_GT(c.local_waits, 0u) << "the threads really queued locally";
  EXPECT_EQ(c.max_redis_waiters, 1);
  EXPECT_EQ(c.fast_fails, 0u);
  EXPECT_EQ(guarded.live_keys(), 0u) << "per-key state reclaimed";
}

// The child half of the cross-process test: env names the server and keys.
TEST(GuardedLockChild, DISABLED_Hammer) {
  const auto task = child_task();
  ASSERT_TRUE(task);
  const std::string k = task->lock;
  Client c(task->options);
  // Per process: its own in-flight key; across processes: the shared one.
  CountingTraits t = counting(c, k + ":count:" + std::to_string(::getpid()));
  GuardedLock<PermitSemaphore, CountingTraits> guarded(semaphores(c), {}, t);
  std::atomic<int> got{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&] {
      for (int r = 0; r < 6; ++r) {
        auto g = guarded.try_acquire(k, 20s);
        ASSERT_TRUE(g);
        c.command({"EVAL", kEnterScript, "2", k + ":all:in_flight", k + ":all:high_water"});
        std::this_thread::sleep_for(1ms);
        c.command({"DECR", k + ":all:in_flight"});
        g.release();
        got.fetch_add(1);
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(got.load(), 48);
  EXPECT_EQ(get_int(c, t.high_water), 1) << "two waiters of this process reached Redis at once";
  EXPECT_EQ(guarded.counters().initialisations, 1u);
}

TEST_F(GuardedLockTest, AcrossProcessesOneWaiterEachAndMutualExclusion) {
  // Three processes, eight threads each, one permit: each process's own
  // high-water mark must be 1, and the holders never overlap.
  std::vector<pid_t> kids;
  for (int p = 0; p < 3; ++p) {
    kids.push_back(spawn_self("GuardedLockChild.DISABLED_Hammer",
                              child_env(server().port(), key())));
    ASSERT_GT(kids.back(), 0);
  }
  for (pid_t k : kids) EXPECT_EQ(wait_child(k, 60s), 0);
  EXPECT_EQ(get_int(client(), key() + ":all:high_water"), 1) << "two holders at once";
  PermitSemaphore sem(client(), key());
  EXPECT_EQ(sem.available_permits(), 1);
  EXPECT_EQ(sem.permits(), std::optional<std::int64_t>(1)) << "set once, by whichever process came first";
}

TEST_F(GuardedLockTest, InitialisationIsSentOncePerKeyPerProcess) {
  CountingTraits t = counting(client(), key("count"));
  auto inits = t.inits;
  GuardedLock<PermitSemaphore, CountingTraits> guarded(semaphores(client()), {}, t);
  EXPECT_EQ(hammer(guarded, key("a"), 6, 5), 30);
  EXPECT_EQ(inits->load(), 1);
  EXPECT_EQ(hammer(guarded, key("b"), 2, 3), 6);
  EXPECT_EQ(inits->load(), 2) << "one per key";
  EXPECT_EQ(guarded.cached_initialisations(), 2u);
  EXPECT_EQ(guarded.counters().initialisations, 2u);
}

TEST_F(GuardedLockTest, AFullInitialisationCacheIsClearedAndKeysAreInitialisedAgain) {
  CountingTraits t = counting(client(), key("count"));
  auto inits = t.inits;
  GuardedLock<PermitSemaphore, CountingTraits> guarded(semaphores(client()), {.init_cache_capacity = 2}, t);
  for (const char* k : {"a", "b", "c", "a"}) EXPECT_TRUE(guarded.try_acquire(key(k), 5s));
  EXPECT_EQ(inits->load(), 4) << "c cleared the full cache, so a was initialised again (harmless: idempotent)";
  EXPECT_LE(guarded.cached_initialisations(), 2u);
}

TEST_F(GuardedLockTest, BeyondMaxWaitersFailsFastWithoutARoundTrip) {
  Guarded guarded([this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); },
                  {.max_waiters = 3});
  auto holder = guarded.try_acquire(key(), 5s);
  ASSERT_TRUE(holder);
  std::vector<std::thread> waiters;
  std::atomic<int> waited{0};
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&] {
      auto g = guarded.try_acquire(key(), 20s);
      EXPECT_TRUE(g);
      waited.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return guarded.waiting(key()) == 3; }));
  const auto before = client().round_trips();
  const auto start = Clock::now();
  for (int i = 0; i < 5; ++i) {
    auto g = guarded.try_acquire(key(), 20s);
    EXPECT_EQ(g.outcome(), Guarded::Outcome::kFastFail);
    EXPECT_FALSE(g);
  }
  EXPECT_LT(ms_since(start), 5'000.0) << "fast-fail never waits (bound: a hang detector)";
  EXPECT_EQ(client().round_trips(), before) << "a fast-fail sends nothing";
  EXPECT_EQ(guarded.counters().fast_fails, 5u);
  EXPECT_EQ(waited.load(), 0);
  holder.release();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(waited.load(), 2);
  EXPECT_EQ(guarded.waiting(key()), 0);
}

TEST_F(GuardedLockTest, TheBudgetIsSharedBetweenTheLocalWaitAndRedis) {
  Guarded guarded([this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); });
  // "Another process" holds the only permit for 30 s.
  PermitSemaphore other(client(), key());
  ASSERT_TRUE(other.try_set_permits(1));
  ASSERT_TRUE(other.try_acquire(0ms, 30s));

  // Local stage only: a local holder keeps the permit; the budget runs out
  // there, and Redis is never asked.
  {
    Guarded::Counters before = guarded.counters();
    std::thread local_holder([&] {
      auto g = guarded.try_acquire(key(), 1s);  // holds the local permit, times out at Redis after 1 s
      EXPECT_FALSE(g);
    });
    ASSERT_TRUE(eventually([&] { return guarded.counters().redis_attempts == before.redis_attempts + 1; }));
    const auto start = Clock::now();
    auto g = guarded.try_acquire(key(), 200ms);
    EXPECT_EQ(g.outcome(), Guarded::Outcome::kTimedOut);
    EXPECT_GE(ms_since(start), 195.0);
    EXPECT_EQ(guarded.counters().local_timeouts, before.local_timeouts + 1);
    EXPECT_EQ(guarded.counters().redis_attempts, before.redis_attempts + 1) << "only the local holder went to Redis";
    local_holder.join();
  }
  // Both stages: 600 ms waiting locally, then Redis gets only what is left
  // of 800 ms. Without the subtraction it would return after ~1,400 ms.
  {
    std::thread local_holder([&] {
      auto g = guarded.try_acquire(key(), 600ms);  // holds the local permit 600 ms, then times out
    });
    ASSERT_TRUE(eventually([&] { return guarded.waiting(key()) == 1; }));
    const auto start = Clock::now();
    auto g = guarded.try_acquire(key(), 800ms);
    const double took = ms_since(start);
    EXPECT_EQ(g.outcome(), Guarded::Outcome::kTimedOut);
    EXPECT_GE(took, 795.0);
    EXPECT_LT(took, 1'300.0) << "the Redis wait was not shortened by the local wait";
    local_holder.join();
  }
  EXPECT_EQ(guarded.live_keys(), 0u);
}

TEST_F(GuardedLockTest, ZeroWaitIsOneAttemptAndNoLocalWaiting) {
  Guarded guarded([this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); });
  auto held = guarded.try_acquire(key(), 0ms);
  ASSERT_TRUE(held) << "free: one attempt suffices";
  std::thread([&] {
    auto g = guarded.try_acquire(key(), 0ms);
    EXPECT_EQ(g.outcome(), Guarded::Outcome::kTimedOut);
  }).join();
  EXPECT_EQ(guarded.counters().local_timeouts, 1u);
}

// A lock whose acquire or release throws on demand.
struct Throwing {
  static inline std::atomic<int> acquire_throws{0}, release_throws{0}, unlocks{0};
  bool try_lock_until(detail::Clock::time_point) {
    if (acquire_throws.load() > 0) {
      acquire_throws.fetch_sub(1);
      throw std::runtime_error("acquire failed");
    }
    return true;
  }
  void unlock() {
    unlocks.fetch_add(1);
    if (release_throws.load() > 0) {
      release_throws.fetch_sub(1);
      throw LockLost("throwing", true);
    }
  }
};

struct ThrowingInitTraits : GuardTraits<Throwing> {
  std::shared_ptr<std::atomic<int>> init_throws = std::make_shared<std::atomic<int>>(0);
  void initialise(Throwing&) {
    if (init_throws->load() > 0) {
      init_throws->fetch_sub(1);
      throw Error(Error::Kind::kIo, "init failed");
    }
  }
};

TEST(GuardedLockExceptions, EveryStageIsReleasedWhenAcquireInitialiseOrReleaseThrows) {
  ThrowingInitTraits traits;
  auto init_throws = traits.init_throws;
  GuardedLock<Throwing, ThrowingInitTraits> guarded([](const std::string&) { return std::make_unique<Throwing>(); },
                                                    {.max_waiters = 1}, traits);
  auto all_free = [&] {
    // max_waiters 1 and one local permit: a try with no wait succeeds only
    // if the ticket, the local permit and the key's state were all given back.
    EXPECT_EQ(guarded.waiting("k"), 0);
    EXPECT_EQ(guarded.live_keys(), 0u);
    const auto waits = guarded.counters().local_waits;
    auto g = guarded.try_acquire("k", 0ms);
    EXPECT_TRUE(g);
    EXPECT_EQ(guarded.counters().local_waits, waits);
  };

  Throwing::acquire_throws = 1;
  EXPECT_THROW(guarded.try_acquire("k", 1s), std::runtime_error);
  all_free();

  *init_throws = 1;
  EXPECT_THROW(guarded.try_acquire("k2", 1s), Error);
  EXPECT_EQ(guarded.cached_initialisations(), 1u) << "only k, initialised by all_free; k2 is not cached";
  EXPECT_TRUE(guarded.try_acquire("k2", 1s)) << "initialised on the next try";
  all_free();

  {
    auto g = guarded.try_acquire("k", 1s);
    ASSERT_TRUE(g);
    Throwing::release_throws = 1;
    EXPECT_THROW(g.release(), LockLost) << "release reports the lost lease";
    EXPECT_NO_THROW(g.release()) << "and only once";
  }
  all_free();

  {
    auto g = guarded.try_acquire("k", 1s);
    ASSERT_TRUE(g);
    Throwing::release_throws = 1;
  }  // ~Guard cannot throw: counted
  EXPECT_EQ(guarded.counters().release_failures, 1u);
  all_free();
}

TEST_F(GuardedLockTest, AnExpiredPermitIsReportedAndTheLocalStagesStillFreed) {
  GuardTraits<PermitSemaphore> t;
  t.lease = 30ms;
  Guarded guarded([this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); }, {}, t);
  auto g = guarded.try_acquire(key(), 1s);
  ASSERT_TRUE(g);
  std::this_thread::sleep_for(100ms);
  EXPECT_THROW(g.release(), PermitNotHeld);
  EXPECT_EQ(guarded.live_keys(), 0u);
  EXPECT_TRUE(guarded.try_acquire(key(), 1s));
}

// The count key is lost while the process still remembers it initialised
// the key: FLUSHALL, a restart without persistence, an eviction. The next
// acquisitions must re-create the count, not wait for a semaphore that no
// longer exists until every budget runs out.
TEST_F(GuardedLockTest, TheSemaphoreIsRecreatedAfterFlushallAndARestart) {
  GuardTraits<PermitSemaphore> t;
  t.permits = 2;
  Guarded guarded([this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); }, {}, t);
  PermitSemaphore view(client(), key());
  {
    auto g = guarded.try_acquire(key(), 1s);
    ASSERT_TRUE(g);
  }
  ASSERT_EQ(guarded.cached_initialisations(), 1u);
  client().command({"FLUSHALL"});
  {
    auto g = guarded.try_acquire(key(), 500ms);
    ASSERT_TRUE(g) << "no permit after FLUSHALL: outcome " << static_cast<int>(g.outcome());
    EXPECT_EQ(view.permits(), std::optional<std::int64_t>(2)) << "the count is re-created with the traits' permits";
    EXPECT_EQ(view.available_permits(), 1);
  }
  server().restart();  // empty data, same port; the client reconnects
  auto g = guarded.try_acquire(key(), 500ms);
  ASSERT_TRUE(g) << "no permit after a restart: outcome " << static_cast<int>(g.outcome());
  EXPECT_EQ(view.permits(), std::optional<std::int64_t>(2));
  EXPECT_EQ(guarded.counters().initialisations, 1u) << "the cache still spares the initialisation round trip";
}

TEST_F(GuardedLockTest, GuardsAnyTimedLockableAndGivesAccessToIt) {
  GuardedLock<FencedSpinLock> guarded(
      [this](const std::string& k) { return std::make_unique<FencedSpinLock>(client(), k); });
  std::int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    auto g = guarded.try_acquire(key(), 1s);
    ASSERT_TRUE(g);
    const std::int64_t token = g.lock().token();
    EXPECT_GT(token, last);
    last = token;
  }
  // And it excludes: threads doing read-modify-write under the guard.
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto g = guarded.try_acquire(key(), 20s);
        ASSERT_TRUE(g);
        const std::int64_t n = get_int(client(), key("n"));
        client().command({"SET", key("n"), std::to_string(n + 1)});
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(get_int(client(), key("n")), 40);
}

TEST_F(GuardedLockTest, BadOptionsAreRejected) {
  auto make = [this](const std::string& k) { return std::make_unique<PermitSemaphore>(client(), k); };
  EXPECT_THROW(Guarded(nullptr), std::invalid_argument);
  EXPECT_THROW(Guarded(make, {.max_waiters = 0}), std::invalid_argument);
  EXPECT_THROW(Guarded(make, {.local_permits = 0}), std::invalid_argument);
  EXPECT_THROW(Guarded(make, {.init_cache_capacity = 0}), std::invalid_argument);
  Guarded null_factory([](const std::string&) { return std::unique_ptr<PermitSemaphore>(); });
  EXPECT_THROW(null_factory.try_acquire(key(), 0ms), std::invalid_argument);
  EXPECT_EQ(null_factory.live_keys(), 0u);
}

}  // namespace
}  // namespace locklab::redis::testing
