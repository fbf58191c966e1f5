#include "distributed/embedded_replica_set.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "distributed/sentinel_resolver.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

std::string info_field(Client& c, const std::string& field) {
  const std::string text = c.command({"INFO", "replication"}).as_string();
  const auto at = text.find(field + ":");
  if (at == std::string::npos) return "";
  return text.substr(at + field.size() + 1, text.find('\r', at) - at - field.size() - 1);
}

TEST(EmbeddedReplicaSetTest, StartsReplicatesAnnouncesLoopbackOnlyAndRemovesEverything) {
  std::vector<std::string> dirs;
  std::vector<pid_t> pids;
  {
    EmbeddedReplicaSet set;
    ASSERT_EQ(set.nodes(), 3);
    ASSERT_EQ(set.sentinel_count(), 3);
    for (int i = 0; i < set.nodes(); ++i) {
      dirs.push_back(set.node(i).directory());
      pids.push_back(set.node(i).pid());
    }
    for (int i = 0; i < set.sentinel_count(); ++i) {
      dirs.push_back(set.sentinel(i).directory());
      pids.push_back(set.sentinel(i).pid());
    }
    EXPECT_EQ(set.primary_index(), 0);
    Client primary(set.node_options(0));
    EXPECT_EQ(info_field(primary, "role"), "master");
    EXPECT_EQ(info_field(primary, "connected_slaves"), "2");
    // Every address a Sentinel hands out is loopback: the primary, each
    // replica, each other Sentinel.
    Client sentinel(set.sentinel(0).client_options());
    const Reply replicas = sentinel.command({"SENTINEL", "REPLICAS", set.options().master_name});
    ASSERT_EQ(replicas.as_array().size(), 2u);
    const Reply others = sentinel.command({"SENTINEL", "SENTINELS", set.options().master_name});
    ASSERT_EQ(others.as_array().size(), 2u);
    for (const Reply* list : {&replicas, &others}) {
      for (const Reply& entry : list->as_array()) {
        const auto& f = entry.as_array();
        for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
          if (f[i].as_string() == "ip") {
            EXPECT_EQ(f[i + 1].as_string(), "127.0.0.1");
          }
        }
      }
    }
    // A write on the primary reaches both replicas (WAIT 2 on the writer's
    // own connection counts them).
    const auto replies = primary.pipeline({{"SET", "k", "v"}, {"WAIT", "2", "2000"}});
    EXPECT_EQ(replies[1].as_integer(), 2);
    Client replica(set.node_options(1));
    EXPECT_EQ(replica.command({"GET", "k"}).as_string(), "v");
    EXPECT_THROW(replica.command({"SET", "k", "w"}), Error);  // READONLY
    // A Client given the Sentinel URL lands on the primary.
    Client via(Client::Options::from_url(set.sentinel_url()));
    EXPECT_EQ(via.options().port, set.node(0).port());
    EXPECT_EQ(via.primary_endpoint(), "127.0.0.1:" + std::to_string(set.node(0).port()));
    EXPECT_EQ(via.command({"GET", "k"}).as_string(), "v");
  }
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
  for (pid_t p : pids) EXPECT_NE(::kill(p, 0), 0) << "process " << p << " is still alive";
}

TEST(EmbeddedReplicaSetTest, RefusesNonsensicalOptions) {
  EmbeddedReplicaSet::Options o;
  o.quorum = 4;
  EXPECT_THROW(EmbeddedReplicaSet{o}, std::invalid_argument);
  o = {};
  o.replicas = 0;
  EXPECT_THROW(EmbeddedReplicaSet{o}, std::invalid_argument);
}

// The primary dies; Sentinel promotes a replica; the same Client object
// carries on against the new primary without being rebuilt.
TEST(EmbeddedReplicaSetTest, ClientFollowsAFailoverThroughSentinel) {
  EmbeddedReplicaSet set;
  Client::Options o = set.client_options();
  o.connect_timeout = 200ms;
  o.command_timeout = 1'000ms;
  Client c(o);
  c.command({"SET", "before", "1"});
  ASSERT_EQ(Client(set.node_options(0)).pipeline({{"SET", "sync", "1"}, {"WAIT", "2", "2000"}})[1].as_integer(), 2);
  set.node(0).kill();
  // Until Sentinel has promoted someone, commands fail (kIo / kConnect).
  EXPECT_THROW(c.command({"GET", "before"}), Error);
  const int promoted = set.wait_for_failover(0, 20s);
  EXPECT_NE(promoted, 0);
  // The next command asks Sentinel again (its pooled connections led to the
  // dead primary) and reaches the promoted replica, which kept the key.
  bool reached = eventually(
      [&] {
        try {
          c.command({"SET", "after", "1"});
          return true;
        } catch (const Error&) {
          return false;
        }
      },
      5s, 20ms);
  ASSERT_TRUE(reached);
  EXPECT_EQ(c.primary_endpoint(), "127.0.0.1:" + std::to_string(set.node(promoted).port()));
  EXPECT_EQ(c.command({"GET", "before"}).as_string(), "1");
  EXPECT_EQ(Client(set.node_options(promoted)).command({"GET", "after"}).as_string(), "1");
}

// A demoted primary answers writes with -READONLY: the Client asks Sentinel
// and retries that one command on the new primary, so the caller sees no
// error at all.
TEST(EmbeddedReplicaSetTest, ClientRetriesAReadonlyReplyOnTheNewPrimary) {
  EmbeddedReplicaSet set;
  Client c(set.client_options());
  c.command({"SET", "k", "1"});
  Client sentinel(set.sentinel(0).client_options());
  EXPECT_EQ(sentinel.command({"SENTINEL", "FAILOVER", set.options().master_name}).as_string(), "OK");
  const int promoted = set.wait_for_failover(0, 20s);
  // Sentinel turns the old primary into a replica of the new one in its own
  // time (seconds); the test does it at once, as Sentinel would.
  Client old(set.node_options(0));
  old.command({"REPLICAOF", "127.0.0.1", std::to_string(set.node(promoted).port())});
  ASSERT_TRUE(eventually([&] { return info_field(old, "role") == "slave"; }, 20s, 20ms));
  EXPECT_NO_THROW(c.command({"SET", "k", "2"}));
  EXPECT_EQ(Client(set.node_options(promoted)).command({"GET", "k"}).as_string(), "2");
}

}  // namespace
}  // namespace locklab::redis::testing
