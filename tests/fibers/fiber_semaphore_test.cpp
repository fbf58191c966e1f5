// Tests for fibers/fiber_semaphore.hpp: never more holders than permits, waiting
// fibers do not pin (default policy), timeouts, and release(n).
#include "fibers/fiber_semaphore.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <boost/fiber/operations.hpp>

#include "fibers/carrier_pool.hpp"
#include "fibers/park_carrier.hpp"
#include "fibers/virtual_thread.hpp"

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct HighWater {
  std::atomic<int> inside{0};
  std::atomic<int> max{0};
  void enter() {
    const int now = inside.fetch_add(1) + 1;
    int seen = max.load();
    while (now > seen && !max.compare_exchange_weak(seen, now)) {
    }
  }
  void leave() { inside.fetch_sub(1); }
};

TEST(FiberSemaphore, NeverAdmitsMoreFibersThanPermits) {
  CarrierPool pool(1);
  FiberSemaphore<> db_pool(5, "db-pool");
  HighWater w;
  std::atomic<int> done{0};
  for (int f = 0; f < 200; ++f) {
    pool.spawn([&] {
      db_pool.acquire();
      w.enter();
      VirtualThread::sleep_for(500us);  // the query: suspends, pins nothing
      w.leave();
      db_pool.release();
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(pool.join_for(30s));
  EXPECT_EQ(done.load(), 200);
  EXPECT_LE(w.max.load(), 5);
  EXPECT_EQ(w.max.load(), 5) << "the permits were never all in use: the test proved little";
  EXPECT_EQ(db_pool.available(), 5u);
  EXPECT_EQ(pool.detector().count(), 0u);
}

TEST(FiberSemaphore, NeverAdmitsMoreThreadsThanPermitsWithEitherPolicy) {
  auto run = [](auto& sem) {
    HighWater w;
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 2000; ++i) {
          sem.acquire();
          w.enter();
          if (i % 32 == 0) std::this_thread::yield();
          w.leave();
          sem.release();
        }
      });
    }
    for (auto& t : threads) t.join();
    return w.max.load();
  };
  FiberSemaphore<ParkFiber> by_fiber(2);
  FiberSemaphore<ParkCarrier> by_thread(2);
  EXPECT_LE(run(by_fiber), 2);
  EXPECT_LE(run(by_thread), 2);
  EXPECT_EQ(by_fiber.available(), 2u);
  EXPECT_EQ(by_thread.available(), 2u);
}

TEST(FiberSemaphore, TryAcquireForTimesOutAndReleaseManyWakesMany) {
  FiberSemaphore<> sem(0);
  EXPECT_FALSE(sem.try_acquire());
  const auto start = Clock::now();
  EXPECT_FALSE(sem.try_acquire_for(20ms));
  EXPECT_GE(Clock::now() - start, 20ms);

  std::atomic<int> got{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (sem.try_acquire_for(10s)) got.fetch_add(1);
    });
  }
  while (sem.waiting() < 3) std::this_thread::sleep_for(1ms);
  sem.release(3);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(got.load(), 3);
  EXPECT_EQ(sem.available(), 0u);
}

TEST(FiberSemaphore, AnyoneMayRelease) {
  CarrierPool pool(1);
  FiberSemaphore<> handoff(0);
  std::atomic<bool> received{false};
  pool.spawn([&] {
    handoff.acquire();  // suspends until the test thread releases
    received = true;
  });
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(received.load());
  handoff.release();
  ASSERT_TRUE(pool.join_for(10s));
  EXPECT_TRUE(received.load());
}

}  // namespace
}  // namespace locklab::fibers
