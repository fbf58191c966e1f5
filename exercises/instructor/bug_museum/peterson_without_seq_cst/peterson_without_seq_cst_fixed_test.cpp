// peterson_without_seq_cst_fixed_test.cpp — the exhibit's experiment on the
// fix, shorter than the grader's (200,000 entries each or 2 s): nobody may
// find the other thread inside, and no increment may be lost.
#include <gtest/gtest.h>

#include <chrono>

#include "exercises/bug_museum/peterson_without_seq_cst/scenario.hpp"
#include "exercises/instructor/bug_museum/peterson_without_seq_cst/peterson_lock.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumPetersonWithoutSeqCstFixed, NeverTwoThreadsInTheCriticalSection) {
  const MutualExclusionRun run = run_two_thread_exclusion<fixed::PetersonLock>(200'000, 2s);
  EXPECT_GT(run.iterations, 0);
  EXPECT_EQ(run.overlaps, 0) << "the fixed lock let both threads in";
  EXPECT_EQ(run.counter, run.iterations);
}

}  // namespace
}  // namespace locklab::museum
