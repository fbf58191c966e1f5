// The invariants of the fault scenarios (benches/scenarios/coupon.hpp), at
// small sizes on real redis-servers: with fencing, under every injected
// fault, the coupons actually issued equal min(coupons, issued responses)
// and there are no phantom issues; without fencing, the faults that break a
// lease (drift, pause, immediate restart) show the violation every run, and
// antirez's delayed restart does not.
#include "benches/scenarios/coupon.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::scenarios {
namespace {

// The child half: a victim or client process of the scenario, configured by
// the environment.
TEST(ScenarioChild, DISABLED_Role) {
  const char* role = std::getenv("LOCKLAB_SCENARIO_ROLE");
  const char* args = std::getenv("LOCKLAB_SCENARIO_ARGS");
  ASSERT_TRUE(role && args);
  const Args a = decode(args);
  const int rc = std::string(role) == "victim" ? victim_main(a) : client_main(a);
  EXPECT_EQ(rc, 0);
}

pid_t launch(const std::string& role, const Args& args) {
  return redis::testing::spawn_self("ScenarioChild.DISABLED_Role",
                                    {"LOCKLAB_SCENARIO_ROLE=" + role, "LOCKLAB_SCENARIO_ARGS=" + encode(args)});
}

class ScenarioInvariants : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    red_ = std::make_unique<World>(3);
    single_ = std::make_unique<World>(1);
  }
  static void TearDownTestSuite() {
    red_.reset();
    single_.reset();
  }

  static CouponResult run(Fault f, bool fenced, bool processes = false) {
    CouponConfig c = fault_config(f, fenced);
    c.coupons = 12;
    c.clients = 4;
    c.processes = processes;
    c.prefix = "locklab:test:coupon";
    return run_coupon(c.red_lock ? *red_ : *single_, c, launch);
  }

  static void expect_fenced_invariants(const CouponResult& r, const char* what) {
    SCOPED_TRACE(what);
    // At most one lost update per write a stalled client made after its own
    // lease ran out (coupon.hpp, "late writes"); 0 without one.
    EXPECT_GE(r.phantom, 0);
    EXPECT_LE(r.phantom, r.tally.late_writes)
        << "issued " << r.tally.issued << ", actually " << r.actual << ", late writes " << r.tally.late_writes;
    EXPECT_EQ(r.actual, std::min<std::int64_t>(12, r.tally.issued));
    EXPECT_EQ(r.actual, 12) << "sold out";
    EXPECT_GT(r.tally.after_sold_out, 0);
  }

  static inline std::unique_ptr<World> red_;
  static inline std::unique_ptr<World> single_;
};

TEST_F(ScenarioInvariants, WithoutAFaultNothingIsLostFencedOrNot) {
  for (bool fenced : {false, true}) {
    const CouponResult r = run(Fault::kNone, fenced);
    EXPECT_GE(r.phantom, 0);
    EXPECT_LE(r.phantom, r.tally.late_writes) << "a lost update without a client stalled past its lease";
    EXPECT_EQ(r.actual, 12);
    EXPECT_EQ(r.tally.fence_rejections, 0);
  }
}

TEST_F(ScenarioInvariants, FencingKeepsEveryFaultFromIssuingPhantoms) {
  for (Fault f : {Fault::kDrift, Fault::kPause, Fault::kRestart, Fault::kRestartDelayed}) {
    const CouponResult r = run(f, true);
    expect_fenced_invariants(r, fault_name(f));
    if (f != Fault::kRestartDelayed) {
      EXPECT_EQ(r.victim, "rejected") << fault_name(f) << ": the stale write must reach the fence and be refused";
      EXPECT_GE(r.tally.fence_rejections, 1);
    }
  }
}

TEST_F(ScenarioInvariants, WithoutFencingTheFaultsThatBreakALeaseLoseAnUpdateEveryRun) {
  for (Fault f : {Fault::kDrift, Fault::kPause, Fault::kRestart}) {
    const CouponResult r = run(f, false);
    SCOPED_TRACE(fault_name(f));
    EXPECT_EQ(r.victim, "issued");
    EXPECT_GE(r.phantom, 1) << "the victim's stale write must overwrite another holder's";
    EXPECT_EQ(r.tally.issued - r.actual, r.phantom);
  }
  // antirez's rule: the restarted server stays down past every lease, so no
  // second holder exists while the victim works.
  const CouponResult r = run(Fault::kRestartDelayed, false);
  EXPECT_EQ(r.phantom, 0);
  EXPECT_EQ(r.victim, "issued");
}

TEST_F(ScenarioInvariants, ClientsAsSeparateProcessesKeepTheInvariant) {
  expect_fenced_invariants(run(Fault::kDrift, true, true), "drift, processes");
}

TEST_F(ScenarioInvariants, BadConfigurationsAreRejected) {
  CouponConfig c = fault_config(Fault::kPause, true);
  EXPECT_THROW(run_coupon(*single_, c), std::invalid_argument) << "pause needs a launcher";
  CouponConfig d = fault_config(Fault::kDrift, true);
  EXPECT_THROW(run_coupon(*single_, d, launch), std::invalid_argument) << "RedLock needs 3 servers";
  EXPECT_THROW(decode("no-equals-sign"), std::invalid_argument);
  EXPECT_THROW(arg_int(Args{}, "missing"), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::scenarios
