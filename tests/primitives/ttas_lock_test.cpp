#include "primitives/ttas_lock.hpp"

#include <gtest/gtest.h>

#include <latch>
#include <thread>
#include <vector>

#include "primitives/cpu_relax.hpp"
#include "tests/primitives/lock_conformance.hpp"



using TtasLockTypes = ::testing::Types<locklab::TtasLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(TtasLock, LockConformance, TtasLockTypes);

namespace locklab {
namespace {

TEST(TtasLockTest, StatsCountContendedAcquires) {
  // 4 threads on 2 cores: bounded rounds until some acquire was contended.
  TtasLock lock;
  std::uint64_t n = 0;
  for (int round = 0; round < 50 && lock.stats().contended_acquires == 0; ++round) {
    std::latch start(4);
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        start.arrive_and_wait();  // start together, so they overlap
        for (int i = 0; i < 200; ++i) {
          lock.lock();
          ++n;
          // Hold a little (~2 us) now and then, so others find it held.
          if (i % 8 == 0) for (int k = 0; k < 100; ++k) cpu_relax();
          lock.unlock();
        }
      });
    }
  }
  EXPECT_GT(lock.stats().contended_acquires, 0);
  EXPECT_EQ(lock.stats().parks, 0) << "a spin lock never parks";
  EXPECT_EQ(n % 800, 0u);
}



}  // namespace
}  // namespace locklab
