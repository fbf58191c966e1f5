#include "distributed/subscriber.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using SubscriberTest = RedisTest;
using Wake = Subscriber::Wake;

TEST_F(SubscriberTest, AMessageWakesExactlyOneWaiter) {
  Subscriber& hub = client().subscriber();
  const std::string ch = key("channel");
  std::vector<Subscriber::Subscription> subs;
  for (int i = 0; i < 5; ++i) subs.push_back(*hub.subscribe(ch, Clock::now() + 5s));
  EXPECT_EQ(hub.commands_sent(), 1u) << "one SUBSCRIBE for five members";
  std::atomic<int> woken{0}, timed_out{0};
  std::vector<std::thread> waiters;
  for (auto& s : subs) {
    waiters.emplace_back([&, sp = &s] {
      const Wake w = sp->wait_until(Clock::now() + 700ms);
      (w == Wake::kMessage ? woken : timed_out).fetch_add(1);
    });
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(client().command({"PUBLISH", ch, "released"}).as_integer(), 1) << "one listening connection";
  for (auto& t : waiters) t.join();
  EXPECT_EQ(woken.load(), 1);
  EXPECT_EQ(timed_out.load(), 4);
}

TEST_F(SubscriberTest, APermitThatArrivesBeforeTheWaitIsNotLost) {
  Subscriber& hub = client().subscriber();
  auto s = hub.subscribe(key("channel"), Clock::now() + 5s);
  ASSERT_TRUE(s.has_value());
  client().command({"PUBLISH", key("channel"), "x"});
  ASSERT_TRUE(eventually([&] { return hub.messages_received() == 1; }));
  EXPECT_EQ(s->wait_until(Clock::now()), Wake::kMessage) << "even with a past deadline";
  EXPECT_EQ(s->wait_until(Clock::now() + 20ms), Wake::kTimeout);
}

TEST_F(SubscriberTest, PermitsGoToTheOldestMemberFirstAndALoserKeepsItsPlace) {
  Subscriber& hub = client().subscriber();
  const std::string ch = key("channel");
  auto a = hub.subscribe(ch, Clock::now() + 5s);
  auto b = hub.join_if_subscribed(ch);
  auto c = hub.join_if_subscribed(ch);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->ahead(), 0u);
  EXPECT_EQ(b->ahead(), 1u);
  EXPECT_EQ(c->ahead(), 2u);
  auto publish = [&](std::uint64_t nth) {
    client().command({"PUBLISH", ch, "released"});
    ASSERT_TRUE(eventually([&] { return hub.messages_received() == nth; }));
  };
  // Nobody is waiting: the permits are granted anyway, oldest first.
  publish(1);
  EXPECT_EQ(c->wait_until(Clock::now()), Wake::kTimeout);
  EXPECT_EQ(b->wait_until(Clock::now()), Wake::kTimeout);
  EXPECT_EQ(a->wait_until(Clock::now()), Wake::kMessage) << "the first to join is served first";
  // `a` used its permit (say its attempt lost a race): it is still the
  // oldest, so the next message is its again, not b's.
  publish(2);
  EXPECT_EQ(b->wait_until(Clock::now()), Wake::kTimeout);
  EXPECT_EQ(a->wait_until(Clock::now()), Wake::kMessage);
  // Two messages: one permit each for the two oldest.
  publish(3);
  publish(4);
  EXPECT_EQ(c->wait_until(Clock::now()), Wake::kTimeout);
  EXPECT_EQ(a->wait_until(Clock::now()), Wake::kMessage);
  EXPECT_EQ(b->wait_until(Clock::now()), Wake::kMessage);
}

TEST_F(SubscriberTest, AMemberLeavingWithAnUnusedPermitPassesItOn) {
  Subscriber& hub = client().subscriber();
  const std::string ch = key("channel");
  auto a = hub.subscribe(ch, Clock::now() + 5s);
  auto b = hub.join_if_subscribed(ch);
  ASSERT_TRUE(a && b);
  std::atomic<bool> woken{false};
  std::thread waiter([&] { woken = b->wait_until(Clock::now() + 5s) == Wake::kMessage; });
  client().command({"PUBLISH", ch, "released"});
  ASSERT_TRUE(eventually([&] { return hub.messages_received() == 1; }));
  a.reset();  // `a` held the permit (the oldest) and leaves without waiting
  waiter.join();
  EXPECT_TRUE(woken.load()) << "the permit died with the member that left";
}

TEST_F(SubscriberTest, JoiningALiveChannelCostsNothingAndTheLastLeaverUnsubscribes) {
  Subscriber& hub = client().subscriber();
  const std::string ch = key("channel");
  EXPECT_FALSE(hub.join_if_subscribed(ch).has_value());
  {
    auto first = hub.subscribe(ch, Clock::now() + 5s);
    auto second = hub.join_if_subscribed(ch);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(hub.commands_sent(), 1u);
    EXPECT_EQ(hub.channel_count(), 1u);
  }
  EXPECT_TRUE(eventually([&] { return hub.commands_sent() == 2u; })) << "UNSUBSCRIBE sent";
  EXPECT_TRUE(eventually([&] {
    return client().command({"PUBSUB", "NUMSUB", ch}).as_array().at(1).as_integer() == 0;
  }));
  EXPECT_EQ(hub.channel_count(), 0u);
}

TEST_F(SubscriberTest, PokeWakesOneMember) {
  auto s = client().subscriber().subscribe(key("channel"), Clock::now() + 5s);
  std::thread poker([&] {
    std::this_thread::sleep_for(30ms);
    s->poke();
  });
  EXPECT_EQ(s->wait_until(Clock::now() + 5s), Wake::kPoked);
  poker.join();
}

TEST_F(SubscriberTest, ARestartedServerIsReportedAndTheChannelResubscribed) {
  Subscriber& hub = client().subscriber();
  const std::string ch = key("channel");
  auto s = hub.subscribe(ch, Clock::now() + 5s);
  server().kill();
  EXPECT_EQ(s->wait_until(Clock::now() + 5s), Wake::kReconnected);
  server().restart();
  EXPECT_TRUE(s->resubscribe(Clock::now() + 5s));
  EXPECT_EQ(client().command({"PUBSUB", "NUMSUB", ch}).as_array().at(1).as_integer(), 1);
  EXPECT_EQ(client().command({"PUBLISH", ch, "x"}).as_integer(), 1);
  EXPECT_EQ(s->wait_until(Clock::now() + 5s), Wake::kMessage);
}

TEST_F(SubscriberTest, AnUnreachableServerIsAConnectErrorNotAHang) {
  Subscriber& hub = client().subscriber();
  server().kill();
  const auto start = Clock::now();
  try {
    (void)hub.subscribe(key("channel"), Clock::time_point::max());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kConnect) << e.what();
    EXPECT_NE(std::string(e.what()).find(options().endpoint()), std::string::npos) << e.what();
  }
  EXPECT_LT(ms_since(start), 5'000.0);
}

// SIGSTOPs the server for one scope: its TCP connections stay open (the
// kernel still acknowledges), nothing is answered — a dead peer that sends
// no FIN, as after a host freeze or a network partition.
class StoppedServer {
 public:
  explicit StoppedServer(pid_t pid) : pid_(pid) { ::kill(pid_, SIGSTOP); }
  ~StoppedServer() { resume(); }
  StoppedServer(const StoppedServer&) = delete;
  StoppedServer& operator=(const StoppedServer&) = delete;
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

TEST_F(SubscriberTest, AServerThatStopsAnsweringIsNoticedByTheHealthCheckAndReportedAsAReconnect) {
  Client::Options o = options();
  o.command_timeout = 300ms;
  Subscriber hub(o);
  const std::string ch = key("channel");
  auto s = hub.subscribe(ch, Clock::now() + 5s);
  ASSERT_TRUE(s.has_value());
  {
    StoppedServer stopped(server().pid());
    // No message, no FIN: only an unanswered PING tells. Without it the
    // member slept to its deadline (or a holder's whole lease).
    EXPECT_EQ(s->wait_until(Clock::now() + 5s), Wake::kReconnected);
    // Still stopped: the new connection's SUBSCRIBE is never confirmed, a
    // typed timeout (connect_timeout + command_timeout), not a hang.
    try {
      (void)s->resubscribe(Clock::now() + 5s);
      FAIL() << "resubscribed to a stopped server";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::kTimeout) << e.what();
    }
  }
  EXPECT_TRUE(s->resubscribe(Clock::now() + 5s));
  EXPECT_EQ(client().command({"PUBLISH", ch, "x"}).as_integer(), 1);
  EXPECT_EQ(s->wait_until(Clock::now() + 5s), Wake::kMessage);
}

// A server that requires a password the options do not carry answers the
// pub/sub connection's SUBSCRIBE with NOAUTH: that error reaches the caller
// at once, typed, not a timeout after connect_timeout + command_timeout.
TEST_F(SubscriberTest, ASubscribeTheServerRefusesIsTheServersErrorWithinOneSecond) {
  client().command({"CONFIG", "SET", "requirepass", "locklab-test-password"});
  Client::Options admin_options = options();
  admin_options.password = "locklab-test-password";
  Client admin(admin_options);
  struct Unprotect {
    Client& admin;
    ~Unprotect() {
      try {
        admin.command({"CONFIG", "SET", "requirepass", ""});
      } catch (const Error&) {
      }
    }
  } unprotect{admin};
  Subscriber hub(options());  // no password
  const auto start = Clock::now();
  try {
    (void)hub.subscribe(key("channel"), Clock::now() + 10s);
    FAIL() << "subscribed without the password";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer) << e.what();
    EXPECT_NE(std::string(e.what()).find("NOAUTH"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(options().endpoint()), std::string::npos) << e.what();
  }
  EXPECT_LT(ms_since(start), 1'000.0);
}

TEST_F(SubscriberTest, ARefusedLoginIsAnAuthErrorNotAConnectError) {
  Client::Options o = options();
  o.user = "nobody";
  o.password = "wrong";
  Subscriber hub(o);
  try {
    (void)hub.subscribe(key("channel"), Clock::now() + 10s);
    FAIL() << "subscribed with a wrong password";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kAuth) << e.what();
  }
}

TEST_F(SubscriberTest, APassedDeadlineIsNotAnError) {
  Subscriber& hub = client().subscriber();
  EXPECT_FALSE(hub.subscribe(key("channel"), Clock::now() - 1s).has_value());
}

}  // namespace
}  // namespace locklab::redis::testing
