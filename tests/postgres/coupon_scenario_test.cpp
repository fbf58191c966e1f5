// The coupon engine (benches/scenarios/coupon.hpp) with its coupons in
// PostgreSQL: the drift fault loses an update without fencing, and with
// fencing the database refuses the stale write and counts it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "benches/scenarios/coupon.hpp"

namespace locklab::scenarios {
namespace {

class CouponOnPostgresTest : public ::testing::Test {
 protected:
  // World starts LOCKLAB_PG_URL's server when set; a test must use its own.
  static void SetUpTestSuite() {
    ::unsetenv("LOCKLAB_PG_URL");
    world_ = std::make_unique<World>(3);
  }
  static void TearDownTestSuite() { world_.reset(); }
  static CouponResult run(bool fenced) {
    CouponConfig c = fault_config(Fault::kDrift, fenced, Resource::kPostgres);
    c.coupons = 30;
    c.clients = 12;
    return run_coupon(*world_, c);
  }
  static inline std::unique_ptr<World> world_;
};

TEST_F(CouponOnPostgresTest, UnfencedTheDriftVictimsStaleWriteLosesAnUpdate) {
  const CouponResult r = run(false);
  EXPECT_GE(r.phantom, 1) << "issued " << r.tally.issued << ", in the row " << r.actual;
  EXPECT_EQ(r.victim, "issued");
  EXPECT_EQ(r.resource_rejections, 0);
}

TEST_F(CouponOnPostgresTest, FencedTheDatabaseRefusesAndCountsTheStaleWrite) {
  const CouponResult r = run(true);
  // A client stalled past its own lease is a stale holder the run did not
  // plan, and the fence (writes only) may accept its write before a newer
  // holder's: at most one lost update each (coupon.hpp, "late writes").
  EXPECT_GE(r.phantom, 0);
  EXPECT_LE(r.phantom, r.tally.late_writes) << "issued " << r.tally.issued << ", in the row " << r.actual
                                            << ", late writes " << r.tally.late_writes;
  EXPECT_EQ(r.actual, 30);
  EXPECT_EQ(r.victim, "rejected");
  EXPECT_GE(r.resource_rejections, 1);
  EXPECT_EQ(r.resource_rejections, r.tally.fence_rejections) << "the row's count and the clients' differ";
  ASSERT_NE(world_->postgres, nullptr);
  pg::Connection db(world_->postgres->options());
  EXPECT_EQ(db.exec("SELECT rejected FROM locklab_fenced_resource WHERE name = $1", {"locklab:coupon:resource"})
                .int64(0, 0),
            r.resource_rejections);
}

}  // namespace
}  // namespace locklab::scenarios
