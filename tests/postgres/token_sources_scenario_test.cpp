// The token sources of benches/scenarios/token_sources.hpp: whatever they
// cost, each must hand out tokens a fenced resource can trust.
#include "benches/scenarios/token_sources.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "distributed/embedded_server.hpp"
#include "postgres/embedded_postgres.hpp"

namespace locklab::scenarios::tokens {
namespace {

class TokenSourcesTest : public ::testing::TestWithParam<Source> {
 protected:
  static void SetUpTestSuite() {
    redis_ = std::make_unique<redis::EmbeddedServer>();
    postgres_ = std::make_unique<pg::EmbeddedPostgres>();
  }
  static void TearDownTestSuite() {
    redis_.reset();
    postgres_.reset();
  }
  static Servers servers() { return {redis_->client_options(), postgres_->connection_options()}; }

  static inline std::unique_ptr<redis::EmbeddedServer> redis_;
  static inline std::unique_ptr<pg::EmbeddedPostgres> postgres_;
};

// 4 waiters at once for 100 ms: every waiter's tokens increase; a shared
// counter gives every number once and skips none.
TEST_P(TokenSourcesTest, TokensIncreaseForEveryWaiterAndAreNeverHandedOutTwice) {
  Config c;
  c.source = GetParam();
  c.waiters = 4;
  c.duration = std::chrono::milliseconds(100);
  c.name = std::string("locklab:test:") + source_id(c.source);
  std::vector<std::vector<std::int64_t>> tokens;
  const Result r = run(servers(), c, &tokens);
  ASSERT_EQ(tokens.size(), 4u);
  std::size_t total = 0;
  std::vector<std::int64_t> all;
  for (const auto& mine : tokens) {
    EXPECT_FALSE(mine.empty()) << "a waiter got no token";
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end(), std::less_equal<>()) &&
                std::adjacent_find(mine.begin(), mine.end()) == mine.end())
        << "a waiter's tokens did not strictly increase";
    total += mine.size();
    all.insert(all.end(), mine.begin(), mine.end());
  }
  EXPECT_EQ(r.tokens, total);
  EXPECT_TRUE(r.unique_and_increasing);
  EXPECT_GT(r.p95_ms, 0);
  EXPECT_LE(r.p50_ms, r.p95_ms);
  if (c.source != Source::kRedisIncrInAcquire) {
    const std::set<std::int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), all.size()) << "a shared counter handed a token out twice";
    EXPECT_EQ(*distinct.rbegin() - *distinct.begin() + 1, static_cast<std::int64_t>(all.size()))
        << "a shared counter skipped numbers";
  }
}

INSTANTIATE_TEST_SUITE_P(EverySource, TokenSourcesTest, ::testing::ValuesIn(kAllSources),
                         [](const auto& info) { return std::string(source_id(info.param)); });

}  // namespace
}  // namespace locklab::scenarios::tokens
