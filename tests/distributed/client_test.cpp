#include "distributed/client.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <iterator>
#include <set>
#include <stdexcept>
#include <thread>

#include "distributed/lease_renewer.hpp"
#include "distributed/subscriber.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

TEST(ClientOptionsTest, ParsesEveryUrlForm) {
  auto o = Client::Options::from_url("redis://127.0.0.1:6390");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 6390);
  EXPECT_EQ(o.db, 0);
  EXPECT_TRUE(o.password.empty());
  o = Client::Options::from_url("redis://alice:s3cret@localhost:7000/3");
  EXPECT_EQ(o.user, "alice");
  EXPECT_EQ(o.password, "s3cret");
  EXPECT_EQ(o.host, "localhost");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.db, 3);
  o = Client::Options::from_url("redis://:pw@h");
  EXPECT_EQ(o.user, "");
  EXPECT_EQ(o.password, "pw");
  EXPECT_EQ(o.port, 6379);
  EXPECT_EQ(o.endpoint(), "h:6379");
}

TEST(ClientOptionsTest, RejectsMalformedUrlsWithTheReason) {
  for (const char* bad : {"http://h:1", "redis://", "redis://h:notaport", "redis://h:70000", "redis://h:1/x",
                          "redis://h:0"}) {
    try {
      (void)Client::Options::from_url(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(ClientOptionsTest, FromEnvironmentTakesThePasswordFromItsOwnVariable) {
  ::unsetenv("LOCKLAB_REDIS_URL");
  EXPECT_FALSE(Client::Options::from_env().has_value());
  ::setenv("LOCKLAB_REDIS_URL", "redis://u:inurl@127.0.0.1:6400/2", 1);
  ::setenv("LOCKLAB_REDIS_PASSWORD", "fromenv", 1);
  auto o = Client::Options::from_env();
  ::unsetenv("LOCKLAB_REDIS_URL");
  ::unsetenv("LOCKLAB_REDIS_PASSWORD");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->password, "fromenv");
  EXPECT_EQ(o->user, "u");
  EXPECT_EQ(o->port, 6400);
  EXPECT_EQ(o->db, 2);
}

// A URL echoed in an error message ends up in logs (./lab bench writes
// results/<suite>.log): the user and the password never appear in it.
TEST(ClientOptionsTest, MalformedUrlMessagesNeverShowTheUserOrThePassword) {
  for (const char* bad : {"redis://alice:s3cret@h:notaport", "redis://alice:s3cret@h:70000",
                          "redis://alice:s3cret@h:1/x", "redis://alice:s3cret@:1", "http://alice:s3cret@h:1",
                          "redis://:s3cret@h:-1/0"}) {
    try {
      (void)Client::Options::from_url(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
      EXPECT_EQ(what.find("alice"), std::string::npos) << what;
      EXPECT_NE(what.find("***@"), std::string::npos) << "the redaction is shown: " << what;
    }
  }
  ::setenv("LOCKLAB_REDIS_URL", "redis://alice:s3cret@127.0.0.1:notaport", 1);
  try {
    (void)Client::Options::from_env();
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
  ::unsetenv("LOCKLAB_REDIS_URL");
}

using ClientTest = RedisTest;

// A reply of the wrong shape names the server and, for a script, the
// script: the two things a reader of the log needs to find the culprit.
TEST_F(ClientTest, AnUnexpectedReplyNamesTheEndpointAndTheScript) {
  const Script returns_text("test.returns_text", "return 'not a number'");
  expect_error([&] { (void)client().eval(returns_text, {key()}, {}).as_integer(); }, Error::Kind::kProtocol,
               {options().endpoint(), "test.returns_text", "not a number"});
  const Script returns_array("test.returns_array", "return {1, 'two'}");
  expect_error([&] { (void)client().eval(returns_array, {key()}, {}).as_array().at(1).as_integer(); },
               Error::Kind::kProtocol, {options().endpoint(), "test.returns_array"});
  expect_error([&] { (void)client().command({"PING"}).as_integer(); }, Error::Kind::kProtocol,
               {options().endpoint()});
}

// maxclients: the server accepts the TCP connection, answers the first
// command with "ERR max number of clients reached" and closes it. That is
// a refused connection (kConnect), not a wrong password (kAuth) and not a
// command's failure (kServer).
TEST_F(ClientTest, MaxClientsReachedIsAConnectErrorNotAnAuthError) {
  EmbeddedServer full;
  Client::Options o = full.client_options();
  o.connect_timeout = 500ms;
  Client admin(o);
  admin.command({"CONFIG", "SET", "requirepass", "pw"});  // admin's connection stays authenticated
  admin.command({"CONFIG", "SET", "maxclients", "1"});    // admin's connection is the one
  const std::vector<std::string> mentions = {o.endpoint(), "max number of clients"};
  Client::Options with_password = o;
  with_password.password = "pw";
  expect_error([&] { Client refused(with_password); }, Error::Kind::kConnect, mentions);  // AUTH meets it
  Client plain(o);  // no AUTH: its constructor's connection is accepted, then refused
  expect_error([&] { (void)plain.command({"PING"}); }, Error::Kind::kConnect, mentions);
}

TEST_F(ClientTest, CommandsAreBinarySafeAndCountedAsRoundTrips) {
  const std::string value("a\0b \"quoted\" \r\n", 15);
  const auto before = client().round_trips();
  EXPECT_EQ(client().command({"SET", key(), value}).as_string(), "OK");
  EXPECT_EQ(client().command({"GET", key()}).as_string(), value);
  EXPECT_TRUE(client().command({"GET", key("missing")}).is_nil());
  EXPECT_EQ(client().round_trips() - before, 3u);
}

TEST_F(ClientTest, ServerErrorsAreTypedAndQuoteTheServer) {
  client().command({"HSET", key(), "f", "v"});
  try {
    client().command({"INCR", key()});
    FAIL() << "INCR on a hash succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(options().endpoint()), std::string::npos) << e.what();
  }
  // The connection stays usable after a server error.
  EXPECT_EQ(client().command({"PING"}).as_string(), "PONG");
}

TEST_F(ClientTest, UnreachableServerIsAConnectErrorNamingHostAndPortWithinTheTimeout) {
  Client::Options o = options();
  {
    EmbeddedServer doomed;  // a port that was just free and is closed again
    o.port = doomed.port();
  }
  o.connect_timeout = 300ms;
  const auto start = Clock::now();
  try {
    Client c(o);
    FAIL() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kConnect);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(o.port)), std::string::npos) << e.what();
  }
  EXPECT_LT(ms_since(start), 5'000.0) << "a hang, not a timeout";
}

TEST_F(ClientTest, ASlowServerTimesOutWithATypedErrorAndTheClientRecovers) {
  EmbeddedServer::Options debug;
  debug.enable_debug_command = true;  // DEBUG SLEEP makes it slow
  EmbeddedServer slow(debug);
  Client::Options o = slow.client_options();
  o.command_timeout = 200ms;
  Client impatient(o);
  Client sleeper_client(slow.client_options());
  std::thread sleeper([&] { sleeper_client.command({"DEBUG", "SLEEP", "0.6"}); });
  std::this_thread::sleep_for(50ms);  // let DEBUG SLEEP start first
  try {
    impatient.command({"PING"});
    ADD_FAILURE() << "PING answered during DEBUG SLEEP";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kTimeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("200 ms"), std::string::npos) << e.what();
  }
  sleeper.join();
  EXPECT_EQ(impatient.command({"PING"}).as_string(), "PONG");
}

const Script kEcho("test.echo", "return {KEYS[1], ARGV[1], redis.call('incr', KEYS[1])}");

TEST_F(ClientTest, ScriptsAreLoadedOnceAndReloadedAfterScriptFlush) {
  // Keys and arguments are data: Lua syntax inside them changes nothing.
  const std::string evil_arg = "'); redis.call('flushall'); --";
  const std::string k = key("with ' quote");
  Reply r = client().eval(kEcho, {k}, {evil_arg});
  ASSERT_EQ(r.as_array().size(), 3u);
  EXPECT_EQ(r.as_array()[0].as_string(), k);
  EXPECT_EQ(r.as_array()[1].as_string(), evil_arg);
  EXPECT_EQ(r.as_array()[2].as_integer(), 1);
  const auto before = client().round_trips();
  client().eval(kEcho, {k}, {"x"});
  EXPECT_EQ(client().round_trips() - before, 1u) << "EVALSHA only, no second SCRIPT LOAD";
  client().command({"SCRIPT", "FLUSH"});
  const auto flushed = client().round_trips();
  r = client().eval(kEcho, {k}, {"y"});
  EXPECT_EQ(r.as_array()[2].as_integer(), 3);
  EXPECT_EQ(client().round_trips() - flushed, 3u) << "EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA";
}

const Script kFails("test.fails", "return redis.call('incr', KEYS[1])");

TEST_F(ClientTest, AFailingScriptIsAServerErrorNamingTheScript) {
  client().command({"RPUSH", key(), "x"});
  try {
    client().eval(kFails, {key()}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_NE(std::string(e.what()).find("test.fails"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
}

TEST_F(ClientTest, IsSafeToShareBetweenThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) client().command({"INCR", key()});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(client().command({"GET", key()}).as_string(), "1600");
  server().restart();  // every pooled connection is closed by the server
  EXPECT_EQ(client().command({"GET", key()}).is_nil(), true) << "a stale pooled connection was used";
  EXPECT_LE(client().open_connections(), 8u);
}

TEST_F(ClientTest, OwnerTokensAreRandomPerClientAndDistinctPerThread) {
  EXPECT_EQ(client().id().size(), 32u);
  EXPECT_EQ(client().id().find_first_not_of("0123456789abcdef"), std::string::npos);
  Client other(options());
  EXPECT_NE(client().id(), other.id());
  std::string mine = client().thread_owner();
  std::string theirs;
  std::thread([&] { theirs = client().thread_owner(); }).join();
  EXPECT_NE(mine, theirs);
  EXPECT_EQ(mine, client().thread_owner());
  EXPECT_EQ(mine.rfind(client().id(), 0), 0u);
}

TEST_F(ClientTest, AKilledServerGivesTypedErrorsAndARestartedOneIsUsedAgain) {
  client().command({"SET", key(), "1"});
  server().kill();
  try {
    client().command({"GET", key()});
    ADD_FAILURE() << "a command succeeded on a killed server";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == Error::Kind::kIo || e.kind() == Error::Kind::kConnect) << e.what();
  }
  EXPECT_THROW(client().command({"GET", key()}), Error);
  server().restart();
  // No persistence: the restarted server is empty. And no command fails on
  // a pooled connection that the old server's death closed.
  EXPECT_TRUE(client().command({"GET", key()}).is_nil());
}

// After fork() the child holds copies of the parent's pooled sockets: a
// command sent on one would interleave with the parent's on the same
// server connection, and each process could read the other's reply. The
// child must get connections of its own, a new id (so it owns nothing the
// parent owns), and leave the parent's connections working.
TEST_F(ClientTest, AForkedChildGetsANewIdAndConnectionsOfItsOwn) {
  const std::string parent_id = client().id();
  const std::string parent_owner = client().thread_owner();
  // The pool holds one idle connection now; CLIENT ID names it on the server.
  const std::int64_t parent_connection = client().command({"CLIENT", "ID"}).as_integer();
  client().command({"SET", key(), "parent"});
  const int status = run_in_forked_child([&] {
    EXPECT_NE(client().id(), parent_id) << "the child kept the parent's id";
    EXPECT_EQ(client().id().size(), 32u);
    EXPECT_NE(client().thread_owner(), parent_owner);
    EXPECT_EQ(client().thread_owner().rfind(client().id(), 0), 0u);
    EXPECT_NE(client().command({"CLIENT", "ID"}).as_integer(), parent_connection)
        << "the child sent its command on the parent's connection";
    EXPECT_EQ(client().command({"GET", key()}).as_string(), "parent");
    client().command({"SET", key(), "child"});
    EXPECT_EQ(client().open_connections(), 1u) << "the inherited connection is not counted";
  });
  EXPECT_EQ(status, 0) << "the forked child's checks failed (its output is above)";
  EXPECT_EQ(client().id(), parent_id) << "the parent's id does not change";
  EXPECT_EQ(client().command({"CLIENT", "ID"}).as_integer(), parent_connection)
      << "the child closed or disturbed the parent's connection";
  EXPECT_EQ(client().command({"GET", key()}).as_string(), "child");
}

// A Subscriber's reader thread does not survive fork: the child's
// subscriber() must be a new one with a thread of its own, or a subscribe
// there waits for a confirmation nobody reads.
TEST_F(ClientTest, AForkedChildStartsASubscriberOfItsOwn) {
  LOCKLAB_SKIP_FORK_THAT_STARTS_THREADS_UNDER_TSAN();
  auto parent_subscription = client().subscriber().subscribe(key("channel"), Clock::now() + 2s);
  ASSERT_TRUE(parent_subscription.has_value());
  Subscriber* parent_subscriber = client().subscriber_if_started();
  const int status = run_in_forked_child([&] {
    const auto open_descriptors = [] {
      return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
    };
    const auto inherited = open_descriptors();
    EXPECT_EQ(client().subscriber_if_started(), nullptr) << "the parent's Subscriber is not the child's";
    EXPECT_EQ(open_descriptors(), inherited - 2) << "the child's copies of the pub/sub socket and eventfd stay open";
    Subscriber& mine = client().subscriber();
    EXPECT_NE(&mine, parent_subscriber);
    EXPECT_TRUE(mine.subscribe(key("channel"), Clock::now() + 2s).has_value());
  });
  EXPECT_EQ(status, 0) << "the forked child's checks failed (its output is above)";
  EXPECT_EQ(client().subscriber_if_started(), parent_subscriber);
  EXPECT_TRUE(client().subscriber().subscribe(key("channel"), Clock::now() + 2s).has_value());
}

// The parent's renewal timer has no thread in the child: lease_renewer()
// must be a new one whose jobs run there, and the parent's keeps running.
TEST_F(ClientTest, AForkedChildGetsALeaseRenewerOfItsOwn) {
  LOCKLAB_SKIP_FORK_THAT_STARTS_THREADS_UNDER_TSAN();
  int group = 0;
  // The parent's timer has a job but sleeps through the fork: a thread that
  // is busy at fork() may hold a lock that stays locked in the child (under
  // AddressSanitizer its allocator's; client.hpp, "After fork()").
  client().lease_renewer().schedule(&group, std::chrono::hours(1), [] { return true; });
  LeaseRenewer* parent_renewer = client().lease_renewer_if_started();
  std::this_thread::sleep_for(50ms);  // the timer thread has started and gone to sleep
  const int status = run_in_forked_child([&] {
    EXPECT_EQ(client().lease_renewer_if_started(), nullptr) << "the parent's renewer is not the child's";
    LeaseRenewer& mine = client().lease_renewer();
    EXPECT_NE(&mine, parent_renewer);
    std::atomic<int> child_runs{0};
    mine.schedule(&group, 2ms, [&] { return ++child_runs < 3; });
    EXPECT_TRUE(eventually([&] { return child_runs.load() == 3; }, 5s)) << "the child's job never ran";
  });
  EXPECT_EQ(status, 0) << "the forked child's checks failed (its output is above)";
  EXPECT_EQ(client().lease_renewer_if_started(), parent_renewer);
  std::atomic<int> parent_runs{0};
  parent_renewer->schedule(&group, 2ms, [&] {
    ++parent_runs;
    return true;
  });
  EXPECT_TRUE(eventually([&] { return parent_runs.load() > 0; }, 5s)) << "the parent's timer stopped";
  parent_renewer->cancel_group(&group);
}

}  // namespace
}  // namespace locklab::redis::testing
