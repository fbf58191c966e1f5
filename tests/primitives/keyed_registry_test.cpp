#include "primitives/keyed_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "primitives/semaphore.hpp"
#include "primitives/waiter_gate.hpp"

namespace locklab {
namespace {

// Counts constructions and destructions, and remembers its constructor's
// argument, so tests can see who created an instance and when it died.
struct Probe {
  static inline std::atomic<int> constructed{0};
  static inline std::atomic<int> destroyed{0};
  static inline std::atomic<int> alive{0};
  static inline std::atomic<int> max_alive{0};
  explicit Probe(int creator_id, bool fail = false) : creator(creator_id) {
    if (fail) throw std::runtime_error("Probe: asked to fail");
    constructed.fetch_add(1);
    const int now = alive.fetch_add(1) + 1;
    int seen = max_alive.load();
    while (now > seen && !max_alive.compare_exchange_weak(seen, now)) {
    }
  }
  ~Probe() {
    alive.fetch_sub(1);
    destroyed.fetch_add(1);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  const int creator;
};

class KeyedRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Probe::constructed = 0;
    Probe::destroyed = 0;
    Probe::alive = 0;
    Probe::max_alive = 0;
  }
};

TEST_F(KeyedRegistryTest, OneInstancePerKey) {
  KeyedRegistry<Probe> reg;
  auto a1 = reg.acquire("a", 1);
  auto a2 = reg.acquire("a", 2);  // args ignored: the instance exists
  auto b = reg.acquire("b", 3);
  EXPECT_EQ(a1.get(), a2.get());
  EXPECT_NE(a1.get(), b.get());
  EXPECT_EQ(a2->creator, 1);
  EXPECT_EQ(Probe::constructed.load(), 2);
  EXPECT_EQ(reg.size(), 2u);
  EXPECT_EQ(reg.find("a").get(), a1.get());
  EXPECT_EQ(reg.find("zzz"), nullptr);
  EXPECT_EQ(reg.size(), 2u) << "find must not insert";
}

TEST_F(KeyedRegistryTest, ReclaimsAnEntryWhenItsLastHandleDrops) {
  KeyedRegistry<Probe> reg;
  auto h = reg.acquire("k", 1);
  auto copy = h;
  h.reset();
  EXPECT_EQ(reg.size(), 1u) << "a copy is still alive";
  EXPECT_EQ(Probe::destroyed.load(), 0);
  copy.reset();
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(Probe::destroyed.load(), 1);
  EXPECT_EQ(reg.find("k"), nullptr);
  auto again = reg.acquire("k", 7);
  EXPECT_EQ(again->creator, 7) << "a reclaimed key starts fresh, from the new caller's args";
  EXPECT_EQ(Probe::constructed.load(), 2);
}

TEST_F(KeyedRegistryTest, AFailingConstructorInsertsNothing) {
  KeyedRegistry<Probe> reg;
  EXPECT_THROW(reg.acquire("k", 1, true), std::runtime_error);
  EXPECT_EQ(reg.size(), 0u);
  auto h = reg.acquire("k", 2);
  EXPECT_EQ(h->creator, 2);
  EXPECT_EQ(reg.size(), 1u);
}

// Many threads race to create the same key while all keep their handles:
// exactly one constructs, every thread gets that one instance.
TEST_F(KeyedRegistryTest, RacingCreatorsConstructOnce) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  KeyedRegistry<Probe> reg;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = "key-" + std::to_string(round);
    std::vector<std::shared_ptr<Probe>> handles(kThreads);
    std::barrier start(kThreads);
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          start.arrive_and_wait();
          handles[static_cast<std::size_t>(t)] = reg.acquire(key, t);
        });
      }
    }
    for (const auto& h : handles) ASSERT_EQ(h.get(), handles[0].get()) << "round " << round;
    EXPECT_GE(handles[0]->creator, 0);
    EXPECT_LT(handles[0]->creator, kThreads);
    ASSERT_EQ(Probe::constructed.load(), round + 1) << "more than one instance built for " << key;
  }
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(Probe::destroyed.load(), kRounds);
}

// Acquire and drop one key from many threads at once, so a last drop
// (reclaiming) races an acquire (re-creating). While a thread holds a
// handle, the key must map to that instance; an old instance must be
// destroyed before a new one is built; at the end nothing is left.
TEST_F(KeyedRegistryTest, ReclamationRacingAcquireKeepsOneInstancePerKey) {
  constexpr int kThreads = 6;
  constexpr int kIterations = 5'000;
  KeyedRegistry<Probe> reg;
  std::atomic<long> mismatches{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kIterations; ++i) {
          auto first = reg.acquire("x", t);
          auto second = reg.acquire("x", t);
          if (first.get() != second.get()) mismatches.fetch_add(1);
        }
      });
    }
  }
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(Probe::max_alive.load(), 1) << "a new instance was built before the old one was destroyed";
  EXPECT_GT(Probe::constructed.load(), 1) << "no reclamation happened: the race was not exercised";
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(Probe::constructed.load(), Probe::destroyed.load());
}

// The ticket-sale semaphore herd's leak, fixed: a stream of 100k distinct
// keys, each used briefly, leaves the registry no bigger than the number of
// handles alive at once.
TEST_F(KeyedRegistryTest, StreamOfDistinctKeysStaysBounded) {
  constexpr int kKeys = 100'000;
  constexpr std::size_t kWindow = 8;  // handles kept alive at once
  KeyedRegistry<WaiterGate> reg;
  std::deque<std::shared_ptr<WaiterGate>> live;
  std::size_t max_size = 0;
  for (int i = 0; i < kKeys; ++i) {
    live.push_back(reg.acquire("order:" + std::to_string(i), 4));
    if (live.size() > kWindow) live.pop_front();
    if (i % 1'000 == 0) max_size = std::max(max_size, reg.size());
  }
  EXPECT_LE(max_size, kWindow);
  EXPECT_EQ(reg.size(), kWindow);
  live.clear();
  EXPECT_EQ(reg.size(), 0u);
}

TEST_F(KeyedRegistryTest, StreamOfDistinctKeysFromManyThreadsStaysBounded) {
  constexpr int kThreads = 4;
  constexpr int kKeysPerThread = 10'000;
  constexpr std::size_t kWindow = 4;
  KeyedRegistry<Semaphore, int> reg;  // integer keys: std::hash is the identity
  std::atomic<std::size_t> max_size{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::deque<std::shared_ptr<Semaphore>> live;
        for (int i = 0; i < kKeysPerThread; ++i) {
          live.push_back(reg.acquire(t * kKeysPerThread + i, 1));
          if (live.size() > kWindow) live.pop_front();
          if (i % 500 == 0) {
            const std::size_t now = reg.size();
            std::size_t seen = max_size.load();
            while (now > seen && !max_size.compare_exchange_weak(seen, now)) {
            }
          }
        }
      });
    }
  }
  // size() counts shard by shard while others insert and erase, so one
  // reading can count a key erased from a shard already counted and its
  // successor in a shard counted later (seen under ASan: 21 against a true
  // bound of 20). Allow one window of such moves per thread: the claim is
  // "bounded by the live windows", not by the 40,000 keys of the history.
  EXPECT_LE(max_size.load(), 2 * kThreads * (kWindow + 1));
  EXPECT_EQ(reg.size(), 0u);
}

// The ticket-sale semaphore herd's use: a per-key Semaphore(1) as a local
// lock. Threads working on the same key exclude each other; the entry
// survives while anyone holds a handle (so everyone contending for a key
// meets the same semaphore).
TEST_F(KeyedRegistryTest, PerKeySemaphoreExcludesPerKey) {
  constexpr int kThreads = 6;
  constexpr int kIterations = 2'000;
  KeyedRegistry<Semaphore> reg;
  long counters[2] = {0, 0};  // plain: guarded by the per-key semaphore
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kIterations; ++i) {
          const int k = (i + t) % 2;
          auto sem = reg.acquire(k == 0 ? "even" : "odd", 1);
          sem->acquire();
          const long seen = counters[k];
          counters[k] = seen + 1;
          sem->release();
        }
      });
    }
  }
  EXPECT_EQ(counters[0] + counters[1], static_cast<long>(kThreads) * kIterations);
  EXPECT_EQ(counters[0], counters[1]);
  EXPECT_EQ(reg.size(), 0u);
}

}  // namespace
}  // namespace locklab
