// check_then_act_counter_test.cpp — EXHIBIT check_then_act_counter, graded
// (graded.hpp): never more successes than the cap, and no increment lost.
// On the exhibit both fail with "BUG SHOWN"; on a fix they pass. Bounded: a
// few rounds of a few thousand operations. See README.md.
#include <gtest/gtest.h>

#include <capped_counter.hpp>
#include <chrono>
#include <cstdio>

#include "exercises/bug_museum/check_then_act_counter/scenario.hpp"
#include "exercises/bug_museum/graded.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumCheckThenActCounter, NeverMoreSuccessesThanTheCap) {
  const OvershootRun run =
      run_overshoot<graded::CappedCounter>(/*cap=*/10, /*threads=*/8, /*rounds=*/20, /*window=*/200us);
  EXPECT_EQ(run.successes, run.cap) << "BUG SHOWN: " << run.successes << " successful try_increment() under a cap of "
                                    << run.cap << " (round " << run.rounds << ")";
  std::printf("observed: %lld successful try_increment() under a cap of %lld (count %lld), round %d\n",
              static_cast<long long>(run.successes), static_cast<long long>(run.cap),
              static_cast<long long>(run.final_count), run.rounds);
}

TEST(MuseumCheckThenActCounter, NoIncrementIsLost) {
  const LostUpdateRun run = run_lost_updates<graded::CappedCounter>(/*threads=*/4, /*per_thread=*/2'000, /*rounds=*/10);
  EXPECT_EQ(run.final_count, run.expected) << "BUG SHOWN: " << run.expected - run.final_count << " of "
                                           << run.expected << " increments lost (round " << run.rounds << ")";
  std::printf("observed: %lld increments counted of %lld made (%lld lost), round %d\n",
              static_cast<long long>(run.final_count), static_cast<long long>(run.expected),
              static_cast<long long>(run.expected - run.final_count), run.rounds);
}

}  // namespace
}  // namespace locklab::museum
