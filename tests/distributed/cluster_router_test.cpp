// The Client on a Redis Cluster (Client::Options::cluster, cluster_router.hpp):
// routing by key slot, MOVED and ASK followed with the slot map kept right,
// the redirect bound, CROSSSLOT as a typed error, scripts and pipelines
// across masters, sharded pub/sub on each channel's master (no release
// crosses the cluster bus, MOVED and a moved slot followed, every waiting
// primitive woken by its release message), and every lock of the registry
// (fenced too), FairLock's queue and PermitSemaphore with names whose
// suffixed keys would hash apart. Round trips are counted, not timed.
//
// One local 3-master cluster for the whole binary (RedisClusterTest), run
// as one ctest entry (tests/CMakeLists.txt). Tests that move a slot move it
// back before they end, so LocalCluster::node_for_slot stays true.
#include "distributed/cluster_router.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "benches/harness/redis_lock_registry.hpp"
#include "distributed/adaptive_lock.hpp"
#include "distributed/cluster_error.hpp"
#include "distributed/count_down_latch.hpp"
#include "distributed/key_slot.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/permit_semaphore.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/read_write_lock.hpp"
#include "distributed/script.hpp"
#include "distributed/subscriber.hpp"
#include "tests/distributed/redis_cluster_test_support.hpp"

namespace locklab::redis::testing {
namespace {

// The first of prefix0, prefix1, ... whose slot master `node` serves.
std::string key_on(const LocalCluster& cluster, int node, const std::string& prefix) {
  for (int i = 0;; ++i) {
    std::string k = prefix + std::to_string(i);
    if (cluster.node_for_slot(key_slot(k)) == node) return k;
  }
}

TEST(ClusterOptionsTest, ParsesTheClusterSchemeAndRefusesWhatACannotHave) {
  const auto o = Client::Options::from_url("redis+cluster://u:pw@10.0.0.7:7000");
  EXPECT_TRUE(o.cluster);
  EXPECT_EQ(o.host, "10.0.0.7");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.user, "u");
  EXPECT_EQ(o.db, 0);
  EXPECT_TRUE(Client::Options::from_url("redis+cluster://h:1/0").cluster);
  EXPECT_FALSE(Client::Options::from_url("redis://h:1").cluster);
  for (const char* bad : {"redis+cluster://h:1/2", "redis+cluster://", "redis+cluster://h:x", "redis+cluster://h:0",
                          "rediss+cluster://h:1"}) {
    try {
      (void)Client::Options::from_url(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  try {
    (void)Client::Options::from_url("redis+cluster://h:1/3");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("database 0 only"), std::string::npos) << e.what();
  }
  try {
    (void)Client::Options::from_url("redis+cluster://user:secret@h:1/3");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
  Client::Options db2;
  db2.cluster = true;
  db2.db = 2;
  db2.lazy_connect = true;
  EXPECT_THROW(Client c(db2), std::invalid_argument);
}

// A seed that is not there, and a seed that is no cluster node: the
// constructor's typed errors, each naming the server.
TEST(ClusterSeedTest, ASeedDownIsConnectAndAStandaloneServerIsTheServersRefusal) {
  Client::Options down;
  down.port = LocalCluster::free_port();  // nothing listens there
  down.cluster = true;
  down.connect_timeout = 500ms;
  expect_error([&] { Client c(down); }, Error::Kind::kConnect, {down.endpoint()});
  EmbeddedServer standalone;
  Client::Options o = standalone.client_options();
  o.cluster = true;
  expect_error([&] { Client c(o); }, Error::Kind::kServer, {o.endpoint(), "cluster support disabled"});
  // lazy_connect: nothing sent until the first command, which fails the same way.
  o.lazy_connect = true;
  Client lazy(o);
  expect_error([&] { lazy.command({"GET", "k"}); }, Error::Kind::kServer, {"cluster support disabled"});
}

TEST(ClusterKeysTest, TheFirstKeyOfEachCommandShape) {
  using R = detail::ClusterRouter;
  using V = std::vector<std::string_view>;
  EXPECT_EQ(R::keys_of(V{"GET", "k"}), V{"k"});
  EXPECT_EQ(R::keys_of(V{"evalsha", "sha", "2", "a", "b", "arg"}), (V{"a", "b"}));
  EXPECT_EQ(R::keys_of(V{"EVAL", "src", "0", "arg"}), V{});
  EXPECT_EQ(R::keys_of(V{"MSET", "a", "1", "b", "2"}), (V{"a", "b"}));
  EXPECT_EQ(R::keys_of(V{"BLPOP", "a", "b", "5"}), (V{"a", "b"}));
  EXPECT_EQ(R::keys_of(V{"MGET", "a", "b"}), (V{"a", "b"}));
  EXPECT_EQ(R::keys_of(V{"PUBLISH", "ch", "m"}), V{});
  EXPECT_EQ(R::keys_of(V{"PING"}), V{});
  EXPECT_EQ(R::keys_of(V{"OBJECT", "ENCODING", "k"}), V{"k"});
}

class ClusterRouterTest : public RedisClusterTest {
 protected:
  std::string node_id(int node) { return admins()[static_cast<std::size_t>(node)]->command({"CLUSTER", "MYID"}).as_string(); }
  // CLUSTER SETSLOT <slot> NODE <owner> on every master, the new owner
  // first (the order the Redis Cluster specification gives for the end of
  // a migration: the owner bumps its epoch before the others hear of it).
  void give_slot(int slot, int owner) {
    const std::string id = node_id(owner);
    admins()[static_cast<std::size_t>(owner)]->command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id});
    for (int i = 0; i < cluster().size(); ++i) {
      if (i != owner) admins()[static_cast<std::size_t>(i)]->command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id});
    }
  }
  // Does every master's CLUSTER SLOTS put `slot` on `node`? (A test that
  // moved a slot waits for this before it leaves, for the tests after it.)
  bool every_master_maps_slot_to(int slot, int node) {
    for (Client* a : admins()) {
      const Reply slots = a->command({"CLUSTER", "SLOTS"});
      for (const Reply& range : slots.as_array()) {
        const auto& f = range.as_array();
        if (f[0].as_integer() <= slot && slot <= f[1].as_integer() &&
            f[2].as_array()[1].as_integer() != cluster().port(node)) {
          return false;
        }
      }
    }
    return true;
  }
};

TEST_F(ClusterRouterTest, SlotsMatchTheServersAndEachKeyGoesToItsOwnerInOneRoundTrip) {
  std::vector<std::string> keys;
  for (int node = 0; node < 3; ++node) keys.push_back(key_on(cluster(), node, "route:"));
  keys.push_back("{tag}:x");
  keys.push_back("");
  for (const auto& k : keys) {
    EXPECT_EQ(key_slot(k), admins()[0]->command({"CLUSTER", "KEYSLOT", k}).as_integer()) << k;
  }
  for (int node = 0; node < 3; ++node) {
    const std::string& k = keys[static_cast<std::size_t>(node)];
    const auto before = client().round_trips();
    client().command({"SET", k, "v" + std::to_string(node)});
    EXPECT_EQ(client().round_trips() - before, 1u) << "a redirect or a map load for " << k;
    // Where it landed: the owner's own (non-routing) client reads it.
    EXPECT_EQ(admins()[static_cast<std::size_t>(node)]->command({"GET", k}).as_string(), "v" + std::to_string(node));
    EXPECT_EQ(client().command({"GET", k}).as_string(), "v" + std::to_string(node));
  }
  EXPECT_GE(client().open_connections(), 3u) << "one pool per master";
}

TEST_F(ClusterRouterTest, KeysInTwoSlotsAreATypedCrossSlotErrorNamingThem) {
  const std::string a = key_on(cluster(), 0, "a"), b = key_on(cluster(), 0, "b");
  ASSERT_NE(key_slot(a), key_slot(b));
  try {
    client().command({"MGET", a, b});
    FAIL() << "MGET of two slots returned";
  } catch (const CrossSlot& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_EQ(e.keys(), (std::vector<std::string>{a, b}));
    EXPECT_EQ(e.slots(), (std::vector<int>{key_slot(a), key_slot(b)}));
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + a + "' (slot " + std::to_string(key_slot(a)) + ")"), std::string::npos) << what;
    EXPECT_NE(what.find("CROSSSLOT"), std::string::npos) << what;
  }
  // One tag, one slot: accepted.
  client().command({"MSET", "{t}" + a, "1", "{t}" + b, "2"});
  EXPECT_EQ(client().command({"MGET", "{t}" + a, "{t}" + b}).as_array()[1].as_string(), "2");
}

// A slot migrated from master 0 to master 1 the way redis-cli --cluster
// reshard does it: ASK while it moves (map unchanged), MOVED after (map
// refreshed once), then one round trip again.
TEST_F(ClusterRouterTest, FollowsAskDuringAMigrationAndMovedAfterIt) {
  const std::string k = key_on(cluster(), 0, "migrating:");
  const int slot = key_slot(k);
  const std::string s = std::to_string(slot);
  const std::string id0 = node_id(0), id1 = node_id(1);
  client().command({"PING"});  // the map is loaded (constructor) and the seed connected
  admins()[1]->command({"CLUSTER", "SETSLOT", s, "IMPORTING", id0});
  admins()[0]->command({"CLUSTER", "SETSLOT", s, "MIGRATING", id1});

  auto before = client().round_trips();
  client().command({"SET", k, "moved-along"});  // master 0 has no such key: ASK master 1
  EXPECT_EQ(client().round_trips() - before, 2u) << "SET -> ASK, then ASKING + SET pipelined";
  EXPECT_EQ(admins()[1]->pipeline({{"ASKING"}, {"GET", k}})[1].as_string(), "moved-along") << "not on the target";
  EXPECT_EQ(admins()[0]->command({"CLUSTER", "COUNTKEYSINSLOT", s}).as_integer(), 0);
  before = client().round_trips();
  EXPECT_EQ(client().command({"GET", k}).as_string(), "moved-along");
  EXPECT_EQ(client().round_trips() - before, 2u) << "ASK must not change the map: master 0 still owns the slot";

  give_slot(slot, 1);
  before = client().round_trips();
  EXPECT_EQ(client().command({"GET", k}).as_string(), "moved-along");
  EXPECT_EQ(client().round_trips() - before, 3u) << "GET -> MOVED, CLUSTER SLOTS, GET";
  before = client().round_trips();
  EXPECT_EQ(client().command({"GET", k}).as_string(), "moved-along");
  EXPECT_EQ(client().round_trips() - before, 1u) << "the map was not corrected";

  // Back to master 0 (empty slot: no keys to move), for the other tests.
  client().command({"DEL", k});
  give_slot(slot, 0);
  ASSERT_TRUE(eventually([&] { return every_master_maps_slot_to(slot, 0); }, 5s));
}

// Master 0 says ASK master 1 (MIGRATING) but master 1 is not importing and
// answers MOVED back: a loop the client must end, with the hops named.
TEST_F(ClusterRouterTest, ARedirectLoopEndsInTooManyRedirects) {
  const std::string k = key_on(cluster(), 0, "loop:");
  const std::string s = std::to_string(key_slot(k));
  admins()[0]->command({"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(1)});
  try {
    client().command({"GET", k});
    ADD_FAILURE() << "a redirect loop returned";
  } catch (const TooManyRedirects& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_EQ(e.hops().size(), static_cast<std::size_t>(detail::ClusterRouter::kMaxRedirects) + 1);
    EXPECT_NE(std::string(e.what()).find("ASK " + s), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MOVED " + s), std::string::npos) << e.what();
  }
  admins()[0]->command({"CLUSTER", "SETSLOT", s, "STABLE"});
  EXPECT_TRUE(client().command({"GET", k}).is_nil()) << "the client did not recover once the loop ended";
}

TEST_F(ClusterRouterTest, ScriptsRunOnTheirFirstKeysMasterAndReloadAfterNoScript) {
  static const Script kEcho("cluster_router_test.echo", "redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]");
  for (int node = 0; node < 3; ++node) {
    const std::string k = key_on(cluster(), node, "script:");
    EXPECT_EQ(client().eval(kEcho, {k}, {"x" + std::to_string(node)}).as_string(), "x" + std::to_string(node));
    EXPECT_EQ(admins()[static_cast<std::size_t>(node)]->command({"GET", k}).as_string(), "x" + std::to_string(node));
  }
  admins()[2]->command({"SCRIPT", "FLUSH"});
  const std::string k2 = key_on(cluster(), 2, "script:");
  EXPECT_EQ(client().eval(kEcho, {k2}, {"again"}).as_string(), "again");
  // A failing script: the server's error, from the key's master.
  static const Script kFails("cluster_router_test.fails", "return redis.call('INCR', KEYS[1])");
  admins()[1]->command({"SET", key_on(cluster(), 1, "text:"), "not a number"});
  expect_error([&] { client().eval(kFails, {key_on(cluster(), 1, "text:")}, {}); }, Error::Kind::kServer,
               {"cluster_router_test.fails", std::to_string(cluster().port(1))});
}

TEST_F(ClusterRouterTest, APipelineIsSplitByMasterAndAnsweredInOrder) {
  std::vector<std::vector<std::string>> commands;
  for (int i = 0; i < 9; ++i) commands.push_back({"SET", key_on(cluster(), i % 3, "p" + std::to_string(i) + ":"), std::to_string(i)});
  commands.push_back({"INCR", commands[0][1]});  // an error reply, in place
  const auto before = client().round_trips();
  const auto replies = client().pipeline(commands);
  EXPECT_EQ(client().round_trips() - before, 3u) << "one round trip per master";
  ASSERT_EQ(replies.size(), commands.size());
  for (int i = 0; i < 9; ++i) EXPECT_EQ(replies[static_cast<std::size_t>(i)].as_string(), "OK");
  EXPECT_EQ(replies[9].as_integer(), 1);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(admins()[static_cast<std::size_t>(i % 3)]->command({"GET", commands[static_cast<std::size_t>(i)][1]}).as_string(),
              i == 0 ? "1" : std::to_string(i));
  }
  // A keyless command travels with the keyed one before it: WAIT after a
  // write reaches the write's master (master 2 here, not the seed), in the
  // same round trip.
  const auto before_wait = client().round_trips();
  const auto waited = client().pipeline({{"SET", key_on(cluster(), 2, "w:"), "1"}, {"WAIT", "0", "0"}});
  EXPECT_EQ(client().round_trips() - before_wait, 1u) << "WAIT went to another master than its write";
  EXPECT_EQ(waited[1].as_integer(), 0);  // no replicas in this cluster
  // A transaction goes whole to its first key's master.
  const std::string t = key_on(cluster(), 2, "tx:");
  const auto tx = client().pipeline({{"MULTI"}, {"SET", t, "a"}, {"GET", t}, {"EXEC"}});
  EXPECT_EQ(tx[3].as_array()[1].as_string(), "a");
}

// Sharded pub/sub: each channel is SSUBSCRIBEd on the master that owns its
// slot, one subscriber connection per master, and an SPUBLISH (routed like
// a key) reaches it. Counted on the servers, not timed: each owner lists
// one shard subscriber, no master lists a classic one.
TEST_F(ClusterRouterTest, EachChannelIsSubscribedShardedOnItsOwnMaster) {
  const auto deadline = [] { return Subscriber::Clock::now() + 5s; };
  Subscriber& hub = client().subscriber();
  EXPECT_TRUE(hub.sharded());
  std::vector<std::string> channels;
  std::vector<Subscriber::Subscription> subs;
  for (int node = 0; node < 3; ++node) {
    channels.push_back(key_on(cluster(), node, "shard-channel:"));
    auto s = hub.subscribe(channels.back(), deadline());
    ASSERT_TRUE(s.has_value()) << channels.back();
    subs.push_back(std::move(*s));
  }
  EXPECT_EQ(hub.open_connections(), 3u) << "one pub/sub connection per master";
  EXPECT_EQ(hub.redirects(), 0u) << "the slot map was right: no MOVED";
  for (int node = 0; node < 3; ++node) {
    const std::string& ch = channels[static_cast<std::size_t>(node)];
    Client& owner = *admins()[static_cast<std::size_t>(node)];
    EXPECT_EQ(owner.command({"PUBSUB", "SHARDNUMSUB", ch}).as_array()[1].as_integer(), 1) << ch;
    for (Client* any : admins()) EXPECT_EQ(any->command({"PUBSUB", "NUMSUB", ch}).as_array()[1].as_integer(), 0);
    EXPECT_EQ(client().command({"SPUBLISH", ch, "1"}).as_integer(), 1) << "the owner knows one receiver";
    EXPECT_EQ(subs[static_cast<std::size_t>(node)].wait_until(deadline()), Subscriber::Wake::kMessage);
  }
  EXPECT_EQ(hub.messages_received(), 3u);
}

// What sharding saves, counted on the cluster bus (CLUSTER INFO's
// cluster_stats_messages_publish_sent: classic PUBLISH messages a master
// forwarded to the others): a PubSubLock release on master 2 forwards
// none, where one classic PUBLISH there is forwarded to both other masters.
TEST_F(ClusterRouterTest, AReleaseSendsNoPublishOverTheClusterBus) {
  const auto forwarded = [&] {
    std::int64_t sum = 0;
    for (Client* a : admins()) {
      std::istringstream info(a->command({"CLUSTER", "INFO"}).as_string());
      for (std::string line; std::getline(info, line);) {
        const std::string field = "cluster_stats_messages_publish_sent:";
        if (line.rfind(field, 0) == 0) sum += std::stoll(line.substr(field.size()));
      }
    }
    return sum;
  };
  const std::string name = key_on(cluster(), 2, "bus:");
  PubSubLock lock(client(), name);
  lock.lock();  // loads the scripts on master 2
  lock.unlock();
  const auto before = forwarded();
  for (int i = 0; i < 10; ++i) {
    lock.lock();
    lock.unlock();  // each final unlock wakes waiters with SPUBLISH
  }
  EXPECT_EQ(forwarded() - before, 0) << "a release's wake-up crossed the cluster bus";
  admins()[2]->command({"PUBLISH", derived_key(name, "channel"), "0"});
  EXPECT_EQ(forwarded() - before, 2) << "a classic PUBLISH on master 2 reaches the 2 other masters over the bus";
}

// A route that names the wrong master (a stale slot map): the SSUBSCRIBE
// is answered MOVED and sent again where the cluster says.
TEST_F(ClusterRouterTest, AStaleRouteIsCorrectedByMoved) {
  Subscriber hub(options(), [&](const std::string&) { return "127.0.0.1:" + std::to_string(cluster().port(0)); });
  const std::string ch = key_on(cluster(), 2, "moved-channel:");
  auto s = hub.subscribe(ch, Subscriber::Clock::now() + 5s);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(hub.redirects(), 1u);
  EXPECT_EQ(admins()[2]->command({"PUBSUB", "SHARDNUMSUB", ch}).as_array()[1].as_integer(), 1);
  EXPECT_EQ(client().command({"SPUBLISH", ch, "1"}).as_integer(), 1);
  EXPECT_EQ(s->wait_until(Subscriber::Clock::now() + 5s), Subscriber::Wake::kMessage);
}

// The channel's slot moves to another master (the end of a resharding):
// the old owner unsubscribes its shard subscribers by itself; the waiter is
// told (kReconnected), re-subscribes on the new owner and hears it there.
TEST_F(ClusterRouterTest, AChannelWhoseSlotMovesIsSubscribedAgainOnTheNewOwner) {
  const auto deadline = [] { return Subscriber::Clock::now() + 5s; };
  const std::string ch = key_on(cluster(), 0, "moving-channel:");
  const int slot = key_slot(ch);
  Subscriber& hub = client().subscriber();
  std::optional<Subscriber::Subscription> s = hub.subscribe(ch, deadline());
  ASSERT_TRUE(s.has_value());
  give_slot(slot, 1);
  EXPECT_EQ(s->wait_until(deadline()), Subscriber::Wake::kReconnected) << "the slot's move was not noticed";
  ASSERT_TRUE(s->resubscribe(deadline()));
  EXPECT_GE(hub.redirects(), 1u);
  EXPECT_EQ(admins()[1]->command({"PUBSUB", "SHARDNUMSUB", ch}).as_array()[1].as_integer(), 1);
  EXPECT_EQ(client().command({"SPUBLISH", ch, "1"}).as_integer(), 1);
  EXPECT_EQ(s->wait_until(deadline()), Subscriber::Wake::kMessage);
  s.reset();
  // Back to master 0, for the other tests.
  give_slot(slot, 0);
  ASSERT_TRUE(eventually([&] { return every_master_maps_slot_to(slot, 0); }, 5s));
}

// Every primitive that parks waiters on the Subscriber, its name on master
// 2 (not the seed): a waiter is woken by the release message, not by its
// bound. The holder is another Client (another process, in effect: no
// local hand-off), its lease 30 s and the waiter's wait 20 s, so without a
// message the waiter would fail; and the messages are counted, not timed.
// `hold` takes the primitive through `holder`; `wait` (on a thread of its
// own, through client()) waits at most 20 s, gives back what it got and
// says whether it got it; `release` lets the holder's go, once master 2
// lists the waiter's shard subscription to `channel` (a release before
// that is caught by the waiter's attempt after subscribing, no message).
class ClusterWakeTest : public ClusterRouterTest {
 protected:
  template <class Hold, class Wait, class Release>
  void expect_woken_by_release(const std::string& what, const std::string& channel, Hold hold, Wait wait,
                               Release release) {
    hold();
    const auto messages = [&] {
      Subscriber* hub = client().subscriber_if_started();
      return hub != nullptr ? hub->messages_received() : 0u;
    };
    const auto before = messages();
    bool got = false;
    std::thread waiter([&] { got = wait(); });
    const bool parked = eventually([&] {
      return admins()[2]->command({"PUBSUB", "SHARDNUMSUB", channel}).as_array()[1].as_integer() == 1;
    });
    release();
    waiter.join();
    EXPECT_TRUE(parked) << what << ": the waiter never subscribed on master 2";
    EXPECT_TRUE(got) << what << ": the waiter did not get it";
    EXPECT_GE(messages() - before, 1u) << what << ": no release message reached the waiter";
  }
};

TEST_F(ClusterWakeTest, AWaiterOnAClusterIsWokenByTheReleaseMessage) {
  Client holder(options());
  PubSubLock::Options pub_sub;
  pub_sub.lease = 30s;
  AdaptiveLock::Options adaptive;
  adaptive.lease = 30s;
  ReadWriteLockOptions read_write;
  read_write.lease = 30s;
  // The three mutex-shaped locks: one holds, the other waits up to 20 s.
  const auto expect_lock_woken = [&]<class Lock>(std::type_identity<Lock>, const std::string& what,
                                                  const std::string& prefix, const auto& lock_options,
                                                  auto channel_of) {
    const std::string name = key_on(cluster(), 2, prefix);
    Lock mine(holder, name, lock_options);
    Lock theirs(client(), name, lock_options);
    expect_woken_by_release(
        what, channel_of(name, theirs), [&] { mine.lock(); },
        [&] {
          if (!theirs.try_lock_for(20s)) return false;
          theirs.unlock();
          return true;
        },
        [&] { mine.unlock(); });
  };
  const auto derived_channel = [](const std::string& name, const auto&) { return derived_key(name, "channel"); };
  expect_lock_woken(std::type_identity<PubSubLock>{}, "PubSubLock", "woken-pub-sub:", pub_sub, derived_channel);
  expect_lock_woken(std::type_identity<AdaptiveLock>{}, "AdaptiveLock", "woken-adaptive:", adaptive, derived_channel);
  expect_lock_woken(std::type_identity<WriteLock>{}, "WriteLock", "woken-write:", read_write,
                    [](const std::string&, const WriteLock& lock) { return lock.channel(); });
  {
    const std::string name = key_on(cluster(), 2, "woken-semaphore:");
    PermitSemaphore mine(holder, name);
    PermitSemaphore theirs(client(), name);
    ASSERT_TRUE(mine.try_set_permits(1));
    std::optional<std::string> permit;
    expect_woken_by_release(
        "PermitSemaphore", derived_key(name, "channel"), [&] { permit = mine.try_acquire(0ms, 30s); },
        [&] {
          const auto got = theirs.try_acquire(20s, 30s);
          if (got) theirs.release(*got);
          return got.has_value();
        },
        [&] {
          ASSERT_TRUE(permit.has_value());
          mine.release(*permit);
        });
  }
  {
    const std::string name = key_on(cluster(), 2, "woken-latch:");
    CountDownLatch mine(holder, name);
    CountDownLatch theirs(client(), name);
    expect_woken_by_release(
        "CountDownLatch", derived_key(name, "channel"), [&] { ASSERT_TRUE(mine.try_set_count(1)); }, [&] { return theirs.await_for(20s); },
        [&] { mine.count_down(); });
  }
}

// Every lock of the registry, plain and fenced, FairLock's queue and
// PermitSemaphore's timeout set, with names whose ":fence"-style suffixed
// keys would land in other slots: the scripts naming several keys get no
// CROSSSLOT, because lock_keys.hpp derives every key into the name's slot.
TEST_F(ClusterRouterTest, EveryLockWorksWithNamesWhoseSuffixedKeysWouldHashApart) {
  std::vector<std::string> names;
  for (int node = 0; node < 3; ++node) {
    for (int i = 0;; ++i) {
      const std::string n = "apart-" + std::to_string(node) + "-" + std::to_string(i);
      if (cluster().node_for_slot(key_slot(n)) == node && key_slot(n) != key_slot(n + ":fence") &&
          cluster().node_for_slot(key_slot(n + ":fence")) != node) {
        names.push_back(n);
        break;
      }
    }
  }
  for (const auto& name : names) {
    for (const auto& info : bench::redis_locks()) {
      for (const bool fenced : {false, true}) {
        auto lock = bench::make_redis_lock(info.name, client(), name, {.lease = 5s, .fenced = fenced});
        EXPECT_TRUE(lock->try_lock_for(1s)) << info.name << " " << name;
        // A second owner is refused while it is held, then gets it.
        std::thread([&] { EXPECT_FALSE(lock->try_lock()) << info.name << " " << name; }).join();
        lock->unlock();
        std::thread([&] {
          EXPECT_TRUE(lock->try_lock()) << info.name << " " << name;
          lock->unlock();
        }).join();
      }
    }
    PermitSemaphore semaphore(client(), name);
    ASSERT_TRUE(semaphore.try_set_permits(1));
    const auto permit = semaphore.try_acquire(1s, 5s);
    ASSERT_TRUE(permit.has_value()) << name;
    EXPECT_FALSE(semaphore.try_acquire(0ms, 5s).has_value());
    semaphore.release(*permit);
    EXPECT_EQ(semaphore.available_permits(), 1);
  }
}

}  // namespace
}  // namespace locklab::redis::testing
