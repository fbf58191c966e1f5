// The invariants of the failover experiment (benches/scenarios/failover.hpp),
// one run of each row that carries a claim, on fresh replica sets: without
// WAIT the lock's key is lost with the primary and the lock is granted
// twice; with wait_replicas = 1 and no replica reachable the first acquire
// is refused, so nothing is granted twice, but losing the replica that
// acknowledged grants it twice again; with fencing the stale holder's
// write is refused even though the new primary re-issued its token number.
#include "benches/scenarios/failover.hpp"

#include <gtest/gtest.h>

namespace locklab::scenarios::failover {
namespace {

TEST(FailoverScenarioTest, WithoutWaitTheLockIsGrantedTwiceAndTheStaleWriteLands) {
  const RunResult r = run_once(Row::kPlain);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.a_granted);
  EXPECT_FALSE(r.key_survived) << "the held-back write reached the promoted replica";
  EXPECT_NE(r.promoted, 0);
  EXPECT_TRUE(r.b_granted);
  EXPECT_TRUE(r.double_grant);
  EXPECT_TRUE(r.phantom);
}

TEST(FailoverScenarioTest, WaitRefusesTheAcquireNoReplicaAcknowledged) {
  const RunResult r = run_once(Row::kWait1);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.a_not_replicated);
  EXPECT_FALSE(r.a_granted);
  EXPECT_TRUE(r.b_granted) << "A's refused acquire was released, so the lock is free on the new primary";
  EXPECT_FALSE(r.double_grant);
  EXPECT_FALSE(r.phantom);
}

TEST(FailoverScenarioTest, WaitDoesNotSurviveLosingTheReplicaThatAcknowledged) {
  const RunResult r = run_once(Row::kWait1AckerLost);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.a_granted) << "the replica that was not cut off acknowledged";
  EXPECT_EQ(r.promoted, 2);
  EXPECT_TRUE(r.promoted_was_behind);
  EXPECT_FALSE(r.key_survived);
  EXPECT_TRUE(r.double_grant);
}

TEST(FailoverScenarioTest, FencingRefusesTheStaleWriteThoughTheTokenWasReissued) {
  const RunResult r = run_once(Row::kFenced);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.double_grant) << "fencing does not stop the double grant";
  EXPECT_GE(r.a_token, 2);
  EXPECT_EQ(r.b_token, r.a_token) << "the counter's INCR was lost with the key";
  EXPECT_TRUE(r.stale_rejected);
  EXPECT_FALSE(r.phantom);
}

}  // namespace
}  // namespace locklab::scenarios::failover
