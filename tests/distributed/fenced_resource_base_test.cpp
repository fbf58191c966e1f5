#include "distributed/fenced_resource_base.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace locklab::redis::testing {
namespace {

// The smallest resource on the base: it "stores" by echoing the verdict it
// is given, so the test sees exactly what the base counts.
class EchoResource : public FencedResourceBase {
 public:
  explicit EchoResource(std::string name) : FencedResourceBase(std::move(name), "EchoResource") {}
  FenceVerdict answer(FenceVerdict v) { return counted(v); }
};

TEST(FencedResourceBaseTest, CountsEachVerdictItIsHandedAndReturnsItUnchanged) {
  EchoResource r("res");
  EXPECT_EQ(r.name(), "res");
  const FenceVerdict a = r.answer({true, 7});
  EXPECT_TRUE(a.accepted);
  EXPECT_EQ(a.highest, 7);
  const FenceVerdict b = r.answer({false, 7});
  EXPECT_FALSE(b.accepted);
  EXPECT_EQ(b.highest, 7);
  (void)r.answer({false, 9});
  EXPECT_EQ(r.accepted(), 1u);
  EXPECT_EQ(r.rejected(), 2u);
}

TEST(FencedResourceBaseTest, AnEmptyNameIsRefusedNamingTheResourceType) {
  try {
    EchoResource r("");
    ADD_FAILURE() << "an empty name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "EchoResource: empty name");
  }
}

TEST(FencedResourceBaseTest, OnlyTokensFromOneUpAreTokens) {
  EXPECT_NO_THROW(check_fencing_token(1));
  EXPECT_NO_THROW(check_fencing_token(INT64_MAX));
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}, INT64_MIN}) {
    try {
      check_fencing_token(bad);
      ADD_FAILURE() << bad << " was taken for a token";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("fencing token " + std::to_string(bad) + " is not a token"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace locklab::redis::testing
