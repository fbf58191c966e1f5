#include "benches/harness/suite.hpp"

#include <gtest/gtest.h>

namespace locklab::bench {
namespace {

TEST(SuiteTest, PointNamesFollowTheSchema) {
  EXPECT_EQ(point_name("counters", "StripedCounter", 4), "counters/StripedCounter/waiters:4");
  EXPECT_EQ(point_name("locks", "TicketLock", 64, {{"cs_ns", 200}, {"think_ns", 0}}),
            "locks/TicketLock/waiters:64/cs_ns:200/think_ns:0");
}

}  // namespace
}  // namespace locklab::bench
