// The invariants of the batch scenario (benches/scenarios/batch.hpp) and of
// Client::pipeline, which it added: every way of fetching returns the same
// values; round trips are counted, not assumed (N / 1 / 1 / 1); the slot
// rule is Redis's; and, on a local 3-master cluster (skipped, with the
// reason, where one cannot start), untagged keys across slots get CROSSSLOT,
// {tagged} ones succeed, and the lock-key table predicts what the server
// does with each lock. No timing assertions: the machine may be busy.
#include "benches/scenarios/batch.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::scenarios::batch {
namespace {

using redis::testing::RedisTest;

class BatchScenario : public RedisTest {};

TEST_F(BatchScenario, EveryMethodReturnsTheLoadedValuesWithItsRoundTrips) {
  Config cfg;
  cfg.keys = 1'000;
  cfg.prefix = key("") + ":";
  load(client(), cfg);
  const auto keys = key_names(cfg);
  std::vector<std::optional<std::string>> expected;
  for (int i = 0; i < cfg.keys; ++i) expected.emplace_back(value_for(i, cfg.value_bytes));
  for (Method m : kMethods) {
    const Fetched f = fetch(client(), m, keys);
    EXPECT_EQ(f.values, expected) << method_label(m);
    EXPECT_EQ(f.round_trips, m == Method::kGetEach ? 1'000u : 1u) << method_label(m);
  }
}

TEST_F(BatchScenario, MissingKeysComeBackMissingInEveryMethod) {
  const std::vector<std::string> keys = {key("a"), key("absent"), key("b")};
  client().command({"SET", keys[0], "1"});
  client().command({"SET", keys[2], "2"});
  const std::vector<std::optional<std::string>> expected = {"1", std::nullopt, "2"};
  for (Method m : kMethods) EXPECT_EQ(fetch(client(), m, keys).values, expected) << method_label(m);
}

TEST_F(BatchScenario, RunReportsEveryMethodWithCountedRoundTripsAndServerCommands) {
  Config cfg;
  cfg.keys = 200;
  cfg.fetches = 3;
  cfg.warmup = 1;
  cfg.ping_samples = 5;
  cfg.torn_fetches = 0;
  cfg.prefix = key("") + ":";
  const Result r = run(client(), cfg);
  ASSERT_EQ(r.methods.size(), std::size(kMethods));
  EXPECT_GT(r.rtt_p50_us, 0);
  for (const auto& m : r.methods) {
    SCOPED_TRACE(method_label(m.method));
    EXPECT_TRUE(m.values_ok);
    EXPECT_EQ(m.fetches, 3);
    EXPECT_EQ(m.round_trips_per_fetch, m.method == Method::kGetEach ? 200.0 : 1.0);
    EXPECT_EQ(m.atomic, m.method == Method::kMget || m.method == Method::kMultiExec);
    EXPECT_LE(m.min_ms, m.p50_ms);
    EXPECT_LE(m.p50_ms, m.p95_ms);
    // Nobody else talks to this test's server: the counts are exact.
    const double cmds = m.method == Method::kMget ? 1 : m.method == Method::kMultiExec ? 202 : 200;
    EXPECT_EQ(m.server_cmds_per_fetch, cmds);
    // The model only adds network time: more round trips, more added.
    EXPECT_GE(m.modelled_ms(1.0, r.rtt_p50_us / 1e3), m.p50_ms - 1e-9);
  }
}

TEST_F(BatchScenario, AtomicMethodsNeverReturnAMixOfTwoWrites) {
  Config cfg;
  cfg.keys = 300;
  cfg.prefix = key("") + ":";
  load(client(), cfg);
  const auto torn = torn_reads(client(), cfg, 5);
  ASSERT_EQ(torn.size(), std::size(kMethods));
  for (std::size_t k = 0; k < torn.size(); ++k) {
    SCOPED_TRACE(method_label(kMethods[k]));
    EXPECT_EQ(torn[k].first, kMethods[k] == Method::kGetEach ? 5 : 5 * kCheapFactor);
    // Non-atomic methods may or may not be caught (that depends on the
    // scheduler); atomic ones must never be.
    if (is_atomic(kMethods[k])) {
      EXPECT_EQ(torn[k].second, 0);
    }
  }
}

TEST_F(BatchScenario, RunRejectsNonsense) {
  Config cfg;
  cfg.fetches = 0;
  EXPECT_THROW(run(client(), cfg), std::invalid_argument);
}

// ------------------------------------------------------------ Client::pipeline

TEST_F(BatchScenario, PipelineRepliesInOrderWithErrorsInPlaceForOneRoundTrip) {
  const std::string k = key();
  const std::uint64_t before = client().round_trips();
  const std::vector<Reply> r = client().pipeline({{"SET", k, "text"}, {"INCR", k}, {"GET", k}, {"EXISTS", k}});
  EXPECT_EQ(client().round_trips() - before, 1u);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].describe(), "OK");
  ASSERT_TRUE(r[1].is_error());  // not an integer: the server says so, the rest still ran
  EXPECT_NE(r[1].as_string().find("not an integer"), std::string::npos) << r[1].as_string();
  EXPECT_EQ(r[2].as_string(), "text");
  EXPECT_EQ(r[3].as_integer(), 1);
  // The connection went back to the pool in step: the next command reads its own reply.
  EXPECT_EQ(client().command({"GET", k}).as_string(), "text");
}

TEST_F(BatchScenario, EmptyPipelineSendsNothingAndAnEmptyCommandIsRefused) {
  const std::uint64_t before = client().round_trips();
  EXPECT_TRUE(client().pipeline({}).empty());
  EXPECT_THROW(client().pipeline({{"PING"}, {}}), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before);
}

TEST_F(BatchScenario, PipelineToAKilledServerThrowsAndTheClientRecovers) {
  server().kill();
  EXPECT_THROW(client().pipeline({{"PING"}, {"PING"}}), redis::Error);
  server().restart();
  const std::vector<Reply> r = client().pipeline({{"PING"}, {"PING"}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].describe(), "PONG");
}

// ------------------------------------------------------------ slots

TEST(BatchSlots, Crc16AndHashTagsFollowTheClusterSpec) {
  EXPECT_EQ(crc16("123456789"), 0x31C3);  // CRC16-XMODEM's check value (cluster spec)
  EXPECT_EQ(hashed_part("{user1000}.following"), "user1000");
  EXPECT_EQ(hashed_part("foo{}{bar}"), "foo{}{bar}");  // empty tag: the whole key
  EXPECT_EQ(hashed_part("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hashed_part("foo{bar}{zap}"), "bar");
  EXPECT_EQ(hashed_part("no-tag"), "no-tag");
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  for (int s : {key_slot("a"), key_slot(""), key_slot("user:1000:name")}) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, 16384);
  }
}

// One cluster for the suite: it takes ~3 s to turn ok (a fresh master waits
// 2 s before it calls itself writable).
class BatchCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      cluster_ = std::make_unique<LocalCluster>(3);
    } catch (const std::exception& e) {
      why_not_ = e.what();
    }
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  void SetUp() override {
    if (!cluster_) GTEST_SKIP() << "no local Redis Cluster here: " << why_not_;
  }
  static inline std::unique_ptr<LocalCluster> cluster_;
  static inline std::string why_not_;
};

TEST_F(BatchCluster, UntaggedKeysAcrossSlotsGetCrossSlotTaggedKeysSucceed) {
  Config cfg;
  cfg.keys = 300;
  const ClusterDemo d = cluster_demo(*cluster_, key_names(cfg));
  ASSERT_EQ(d.untagged_slots.size(), 3u);
  EXPECT_NE(d.untagged_slots[0], d.untagged_slots[1]);
  EXPECT_TRUE(d.untagged_crossslot) << d.untagged_reply;
  EXPECT_EQ(d.tagged_slots[0], d.tagged_slots[1]);
  EXPECT_EQ(d.tagged_slots[1], d.tagged_slots[2]);
  EXPECT_TRUE(d.tagged_ok) << d.tagged_reply;
  EXPECT_EQ(d.crc_checked, 306);
  EXPECT_EQ(d.crc_mismatches, 0);
  // A plain pipeline to one node: every key answered or MOVED, and with
  // 300 keys over 3 masters, some of each.
  EXPECT_EQ(d.pipeline_answered + d.pipeline_moved, 300);
  EXPECT_GT(d.pipeline_answered, 0);
  EXPECT_GT(d.pipeline_moved, 0);
}

TEST_F(BatchCluster, TheLockKeyTablePredictsWhatTheClusterDoesWithEachLock) {
  Client binder(cluster_->client_options(0));
  const auto checks = check_lock_keys(cluster_.get(), binder, {"locklab:test:orders:7", "{locklab:test:orders:7}"});
  ASSERT_FALSE(checks.empty());
  for (const auto& c : checks) {
    SCOPED_TRACE(c.set.lock + " " + c.set.name + ": " + c.live_detail);
    EXPECT_TRUE(c.from_server);
    EXPECT_TRUE(c.same_slot) << "a derived key left the lock key's slot (lock_keys.hpp), tagged name or not";
    if (c.live < 0) continue;  // RedLock: not a cluster design
    // One slot: the lock works; several: the server refuses its script.
    EXPECT_EQ(c.live == 1, c.same_slot);
    if (!c.same_slot) {
      EXPECT_NE(c.live_detail.find("CROSSSLOT"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace locklab::scenarios::batch
