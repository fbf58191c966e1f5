#include "postgres/fenced_resource.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/postgres/postgres_test_support.hpp"

namespace locklab::pg::testing {
namespace {

using FencedResourceTest = PostgresTest;

TEST_F(FencedResourceTest, AFreshRowTakesTheFirstTokenAndReadsItBack) {
  FencedResource r(db(), table());
  EXPECT_EQ(r.read(), std::nullopt);
  const FenceVerdict v = r.write(1, "first");
  EXPECT_TRUE(v.accepted);
  EXPECT_EQ(v.highest, 1);
  EXPECT_EQ(r.read(), "first");
}

TEST_F(FencedResourceTest, AStaleTokenIsRefusedByTheDatabase) {
  FencedResource r(db(), table());
  ASSERT_TRUE(r.write(5, "five").accepted);
  const FenceVerdict stale = r.write(3, "three");
  EXPECT_FALSE(stale.accepted);
  EXPECT_EQ(stale.highest, 5) << "the verdict names the token that beat it";
  EXPECT_EQ(r.read(), "five") << "the stale write changed the value";
  EXPECT_TRUE(r.write(6, "six").accepted);
  EXPECT_EQ(r.read(), "six");
}

// The lab's strict rule, the same as redis::FencedResource's.
TEST_F(FencedResourceTest, AnEqualTokenIsRefusedToo) {
  FencedResource r(db(), table());
  ASSERT_TRUE(r.write(7, "x").accepted);
  const FenceVerdict again = r.write(7, "y");
  EXPECT_FALSE(again.accepted);
  EXPECT_EQ(again.highest, 7);
  EXPECT_EQ(r.read(), "x");
}

TEST_F(FencedResourceTest, TheDatabaseCountsEveryVerdictForEveryWriter) {
  const std::string name = table();
  FencedResource mine(db(), name);
  Connection other_session(server().connection_options());
  FencedResource theirs(other_session, name);  // the same row, another session
  ASSERT_TRUE(mine.write(2, "a").accepted);
  ASSERT_FALSE(theirs.write(1, "b").accepted);
  ASSERT_TRUE(theirs.write(4, "c").accepted);
  ASSERT_FALSE(mine.write(4, "d").accepted);
  ASSERT_FALSE(mine.write(3, "e").accepted);
  EXPECT_EQ(mine.accepted(), 1u);
  EXPECT_EQ(mine.rejected(), 2u);
  EXPECT_EQ(theirs.accepted(), 1u);
  EXPECT_EQ(theirs.rejected(), 1u);
  for (FencedResource* r : {&mine, &theirs}) {
    const FencedResource::Totals t = r->totals();
    EXPECT_EQ(t.accepted, 2);
    EXPECT_EQ(t.rejected, 3);
    EXPECT_EQ(t.highest, 4);
  }
  FencedResource reopened(db(), name);  // the constructor leaves an existing row alone
  EXPECT_EQ(reopened.totals().rejected, 3);
  reopened.clear();
  EXPECT_EQ(reopened.totals().accepted, 0);
  EXPECT_EQ(reopened.totals().highest, 0);
  EXPECT_EQ(reopened.read(), std::nullopt);
  EXPECT_TRUE(mine.write(1, "after clear").accepted);
}

TEST_F(FencedResourceTest, ATokenBelowOneIsACallerBugAndSendsNothing) {
  FencedResource r(db(), table());
  const auto sent = db().round_trips();
  EXPECT_THROW(r.write(0, "x"), std::invalid_argument);
  EXPECT_THROW(r.write(-4, "x"), std::invalid_argument);
  EXPECT_EQ(db().round_trips(), sent);
  EXPECT_THROW(FencedResource(db(), ""), std::invalid_argument);
}

TEST_F(FencedResourceTest, ARowDeletedBehindItsBackIsAProtocolError) {
  FencedResource r(db(), table());
  db().exec("DELETE FROM locklab_fenced_resource WHERE name = $1", {table()});
  expect_error([&] { r.write(1, "x"); }, Error::Kind::kProtocol, {"is gone"});
}

// 8 sessions write overlapping token sequences in shuffled orders at once.
// A trigger logs every accepted change of the token: each must raise it
// (no stale or equal token ever got through, whatever the interleaving),
// and the counts must add up.
TEST_F(FencedResourceTest, ConcurrentWritersNeverLetAStaleTokenThrough) {
  const std::string name = table();
  FencedResource setup(db(), name);
  const std::string log = table("log");
  db().exec("CREATE TABLE " + log + " (old_token bigint, new_token bigint)");
  db().exec("CREATE FUNCTION " + log + "_f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "INSERT INTO " + log + " VALUES (OLD.token, NEW.token); RETURN NEW; END $$");
  db().exec("CREATE TRIGGER " + log + "_t AFTER UPDATE OF value ON locklab_fenced_resource FOR EACH ROW "
            "WHEN (NEW.name = '" + name + "') EXECUTE FUNCTION " + log + "_f()");
  constexpr int kWriters = 8;
  constexpr int kTokens = 60;  // each writer writes tokens 1..60 once: 480 writes, 60 at most accepted
  std::vector<std::thread> writers;
  std::vector<std::uint64_t> accepted(kWriters), rejected(kWriters);
  std::vector<std::string> failures(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      try {
        Connection session(server().connection_options());
        FencedResource r(session, name);
        std::vector<std::int64_t> tokens(kTokens);
        for (int i = 0; i < kTokens; ++i) tokens[static_cast<std::size_t>(i)] = i + 1;
        // Mostly ascending, as holders of a lock would be, with local swaps
        // so that stale writes arrive late.
        std::mt19937 rng(static_cast<unsigned>(w));
        for (std::size_t i = 0; i + 1 < tokens.size(); i += 2) {
          if (rng() % 2 == 0) std::swap(tokens[i], tokens[i + 1]);
        }
        for (std::int64_t t : tokens) {
          std::string value = "w";  // built in steps: g++ 12 misreads a + chain here (-Wrestrict)
          value += std::to_string(w);
          value += ':';
          value += std::to_string(t);
          const FenceVerdict v = r.write(t, value);
          if (v.accepted ? v.highest != t : v.highest < t) failures[static_cast<std::size_t>(w)] = "bad verdict";
        }
        accepted[static_cast<std::size_t>(w)] = r.accepted();
        rejected[static_cast<std::size_t>(w)] = r.rejected();
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(w)] = e.what();
      }
    });
  }
  for (auto& t : writers) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
  std::uint64_t acc = 0, rej = 0;
  for (int w = 0; w < kWriters; ++w) {
    acc += accepted[static_cast<std::size_t>(w)];
    rej += rejected[static_cast<std::size_t>(w)];
  }
  const FencedResource::Totals t = setup.totals();
  EXPECT_EQ(acc + rej, static_cast<std::uint64_t>(kWriters * kTokens));
  EXPECT_EQ(t.accepted, static_cast<std::int64_t>(acc));
  EXPECT_EQ(t.rejected, static_cast<std::int64_t>(rej));
  EXPECT_EQ(t.highest, kTokens);
  EXPECT_LE(t.accepted, kTokens) << "a token was accepted twice";
  EXPECT_GT(t.rejected, 0) << "no write was stale: the test did not exercise the fence";
  const Result changes = db().exec("SELECT count(*), count(*) FILTER (WHERE new_token <= old_token) FROM " + log);
  EXPECT_EQ(changes.int64(0, 0), t.accepted) << "every accepted write changed the row once";
  EXPECT_EQ(changes.int64(0, 1), 0) << "a write with a token not above the highest got through";
  EXPECT_EQ(setup.read()->substr(setup.read()->find(':') + 1), std::to_string(kTokens));
  db().exec("DROP TRIGGER " + log + "_t ON locklab_fenced_resource");
}

}  // namespace
}  // namespace locklab::pg::testing
