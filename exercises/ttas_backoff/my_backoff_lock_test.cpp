// my_backoff_lock_test.cpp — the checks of the exercise ttas_backoff: the
// lab's conformance suite (tests/primitives/lock_conformance.hpp), the same
// one TtasLock and BackoffLock pass. Built against your file (starter) or the
// reference (solution) by exercises/CMakeLists.txt; run with
//   exercises/check.sh ttas_backoff
#include <my_backoff_lock.hpp>  // angle brackets: the build picks whose file

#include "tests/primitives/lock_conformance.hpp"

using MyBackoffLocks = ::testing::Types<locklab::exercises::MyBackoffLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyBackoffLock, LockConformance, MyBackoffLocks);

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "exercises/support/counted_atomic.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {
namespace {

// The point of test-and-test-and-set with backoff: a waiter reads the word
// (its own shared copy of the line) while the lock is held and exchanges only
// when it looks free, then backs off after a lost race. A test-and-set loop
// exchanges on every spin instead: it passes every check above and is the
// lock this exercise replaces. Counted, not timed: 4 threads (more than the
// lab's 2 cores) take the lock 2000 times each, holding it for 64 pauses, and
// every 16th time for a 50 us sleep (a holder off its core: on a busy machine
// the threads might otherwise run one after the other and never contend),
// and the exchanges (CountedAtomic) per acquisition must stay small.
TEST(MyBackoffLockTest, ContendedWaitersPollInsteadOfExchanging) {
  constexpr int kThreads = 4;
  constexpr int kAcquisitionsPerThread = 2000;
  constexpr double kMaxExchangesPerAcquisition = 6.0;  // one to take it, a few lost races
  MyBackoffLock lock;
  std::vector<std::uint64_t> exchanges(kThreads, 0);
  std::uint64_t inside = 0;  // plain: only mutual exclusion keeps it exact
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const std::uint64_t before = rmw_operations_of_this_thread();
        for (int i = 0; i < kAcquisitionsPerThread; ++i) {
          lock.lock();
          ++inside;
          for (int p = 0; p < 64; ++p) cpu_relax();
          if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
          lock.unlock();
        }
        exchanges[t] = rmw_operations_of_this_thread() - before;
      });
    }
  }  // joins
  std::uint64_t total = 0;
  for (const auto e : exchanges) total += e;
  const double acquisitions = kThreads * kAcquisitionsPerThread;
  EXPECT_EQ(inside, static_cast<std::uint64_t>(acquisitions)) << "mutual exclusion";
  EXPECT_GE(total, static_cast<std::uint64_t>(acquisitions))
      << "fewer exchanges than acquisitions: is the lock word still the CountedAtomic<bool> of the starter?";
  EXPECT_LE(static_cast<double>(total) / acquisitions, kMaxExchangesPerAcquisition)
      << total << " exchanges for " << acquisitions
      << " acquisitions: the waiters exchange while the lock is held (test-and-set) instead of polling with loads "
         "and backing off after a lost race";
}

}  // namespace
}  // namespace locklab::exercises
