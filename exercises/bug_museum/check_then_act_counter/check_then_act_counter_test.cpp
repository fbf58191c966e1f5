// check_then_act_counter_test.cpp — EXHIBIT check_then_act_counter: these
// tests PASS when they observe the bugs: more successes than the cap allows,
// and increments that vanish. Bounded: a few rounds of a few thousand
// operations. See README.md.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "exercises/bug_museum/check_then_act_counter/capped_counter.hpp"
#include "exercises/bug_museum/check_then_act_counter/scenario.hpp"

namespace locklab::museum {
namespace {

using namespace std::chrono_literals;

TEST(MuseumCheckThenActCounter, ThreadsThatAllSawRoomAllGoInAndTheCapIsExceeded) {
  const OvershootRun run = run_overshoot<CappedCounter>(/*cap=*/10, /*threads=*/8, /*rounds=*/20, /*window=*/200us);
  EXPECT_GT(run.successes, run.cap) << "the bug did not show in " << run.rounds << " rounds";
  std::printf("observed: %lld successful try_increment() under a cap of %lld (count %lld), round %d\n",
              static_cast<long long>(run.successes), static_cast<long long>(run.cap),
              static_cast<long long>(run.final_count), run.rounds);
}

TEST(MuseumCheckThenActCounter, AReadThenWriteIncrementLosesUpdates) {
  const LostUpdateRun run = run_lost_updates<CappedCounter>(/*threads=*/4, /*per_thread=*/2'000, /*rounds=*/10);
  EXPECT_LT(run.final_count, run.expected) << "the bug did not show in " << run.rounds << " rounds";
  std::printf("observed: %lld increments counted of %lld made (%lld lost), round %d\n",
              static_cast<long long>(run.final_count), static_cast<long long>(run.expected),
              static_cast<long long>(run.expected - run.final_count), run.rounds);
}

}  // namespace
}  // namespace locklab::museum
