// peterson_without_seq_cst_test.cpp — EXHIBIT peterson_without_seq_cst,
// graded (graded.hpp): two threads lock, bump a plain counter, unlock, up to
// 1,000,000 times each or 10 s. PASS if no entry ever found the other thread
// inside and no increment was lost; on the exhibit it fails with
// "BUG SHOWN": both threads got in. A bounded run cannot prove a lock
// correct, only fail to catch it; see README.md for how often it catches the
// exhibit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <peterson_lock.hpp>

#include "exercises/bug_museum/graded.hpp"
#include "exercises/bug_museum/peterson_without_seq_cst/scenario.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumPetersonWithoutSeqCst, NeverTwoThreadsInTheCriticalSection) {
  const MutualExclusionRun run = run_two_thread_exclusion<graded::PetersonLock>(1'000'000, 10s);
  EXPECT_EQ(run.overlaps, 0) << "BUG SHOWN: both threads were inside the critical section at once, after "
                             << run.iterations << " entries (" << static_cast<long long>(run.seconds * 1000)
                             << " ms)";
  EXPECT_EQ(run.counter, run.iterations) << "BUG SHOWN: the plain counter lost increments";
  std::printf("observed: %lld entries in %.2f s%s, %lld of them found the other thread inside; counter %lld\n",
              static_cast<long long>(run.iterations), run.seconds, run.hit_time_cap ? " (time cap)" : "",
              static_cast<long long>(run.overlaps), static_cast<long long>(run.counter));
}

}  // namespace
}  // namespace locklab::museum
