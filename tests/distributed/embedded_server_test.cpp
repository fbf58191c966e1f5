#include "distributed/embedded_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "distributed/child_process.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

std::string config(Client& c, const char* name) {
  return c.command({"CONFIG", "GET", name}).as_array().at(1).as_string();
}

TEST(EmbeddedServerTest, ListensOnLoopbackOnlyWithoutPersistenceInATemporaryDirectory) {
  std::string dir;
  pid_t pid = -1;
  {
    EmbeddedServer server;
    dir = server.directory();
    pid = server.pid();
    EXPECT_TRUE(server.running());
    EXPECT_EQ(server.host(), "127.0.0.1");
    EXPECT_EQ(server.url(), "redis://127.0.0.1:" + std::to_string(server.port()));
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    Client c(server.client_options());
    EXPECT_EQ(c.command({"PING"}).as_string(), "PONG");
    EXPECT_EQ(config(c, "bind"), "127.0.0.1");
    EXPECT_EQ(config(c, "save"), "");
    EXPECT_EQ(config(c, "appendonly"), "no");
    EXPECT_EQ(config(c, "port"), std::to_string(server.port()));
    EXPECT_EQ(config(c, "dir"), std::filesystem::canonical(dir).string());
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the temporary directory was not removed";
  EXPECT_NE(::kill(pid, 0), 0) << "the server process is still alive";
}

TEST(EmbeddedServerTest, StartsIndependentServersOnDistinctPorts) {
  auto servers = EmbeddedServer::start_many(3);
  std::set<int> ports;
  for (auto& s : servers) {
    ports.insert(s->port());
    Client c(s->client_options());
    c.command({"SET", "whoami", std::to_string(s->port())});
  }
  EXPECT_EQ(ports.size(), 3u);
  for (auto& s : servers) {
    Client c(s->client_options());
    EXPECT_EQ(c.command({"GET", "whoami"}).as_string(), std::to_string(s->port()));
  }
}

TEST(EmbeddedServerTest, KillAndRestartKeepThePortAndLoseTheData) {
  EmbeddedServer server;
  const int port = server.port();
  {
    Client c(server.client_options());
    c.command({"SET", "k", "v"});
  }
  server.kill();
  EXPECT_FALSE(server.running());
  server.kill();  // idempotent
  server.restart();
  EXPECT_EQ(server.port(), port);
  Client c(server.client_options());
  EXPECT_TRUE(c.command({"GET", "k"}).is_nil());
  server.stop();
  EXPECT_FALSE(server.running());
}

TEST(EmbeddedServerTest, AMissingExecutableIsAClearError) {
  EmbeddedServer::Options o;
  o.executable = "/nonexistent/redis-server";
  try {
    EmbeddedServer s(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/redis-server"), std::string::npos) << e.what();
  }
}

TEST(EmbeddedServerTest, AServerThatCannotStartReportsItsLog) {
  EmbeddedServer::Options o;
  o.extra_args = {"--no-such-option", "1"};
  o.start_timeout = std::chrono::milliseconds(2'000);
  try {
    EmbeddedServer s(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("did not start"), std::string::npos) << e.what();
  }
}

// A redis-server that is not ours answers on the port (another test's, a
// developer's): restart() must not adopt it. Adopting it would flush, kill
// and fault-inject someone else's server.
TEST(EmbeddedServerTest, AForeignServerOnThePortIsNotAdopted) {
  EmbeddedServer ours;
  const int port = ours.port();
  ours.stop();
  const std::string exe = EmbeddedServer::find_executable();
  std::vector<std::string> args = {exe,        "--port",       std::to_string(port), "--bind",    "127.0.0.1",
                                   "--save",   "",             "--appendonly",       "no",        "--dir",
                                   ours.directory(), "--logfile", ours.directory() + "/foreign.log"};
  ChildProcess server = ChildProcess::spawn(args);  // SIGKILLed and reaped at the end of the test
  ASSERT_TRUE(server.running());
  const pid_t foreign = server.pid();
  Client::Options o = ours.client_options();
  o.connect_timeout = 200ms;
  std::unique_ptr<Client> c;
  ASSERT_TRUE(eventually([&] {
    try {
      c = std::make_unique<Client>(o);
      return c->command({"PING"}).as_string() == "PONG";
    } catch (const Error&) {
      return false;
    }
  }, 5s)) << "the foreign server did not come up";
  c->command({"SET", "owner", "someone else"});
  try {
    ours.restart();
    ADD_FAILURE() << "restart() adopted the foreign server (process " << foreign << ") as its own, pid "
                  << ours.pid();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(foreign)), std::string::npos)
        << "the message names the foreign process: " << e.what();
  }
  EXPECT_FALSE(ours.running());
  EXPECT_EQ(c->command({"GET", "owner"}).as_string(), "someone else");
  EXPECT_EQ(::kill(foreign, 0), 0) << "the foreign server was stopped by us";
}

// DEBUG (SLEEP, RESTART, SEGFAULT, ...) is a fault injector: off unless a
// test asks for it.
TEST(EmbeddedServerTest, DebugCommandsAreRefusedByDefault) {
  EmbeddedServer server;
  Client c(server.client_options());
  try {
    (void)c.command({"DEBUG", "SLEEP", "0"});
    FAIL() << "DEBUG ran on a server that did not ask for it";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer) << e.what();
  }
}

TEST(EmbeddedServerTest, DebugCommandsRunWhenEnabled) {
  EmbeddedServer::Options o;
  o.enable_debug_command = true;
  EmbeddedServer server(o);
  Client c(server.client_options());
  EXPECT_EQ(c.command({"DEBUG", "SLEEP", "0"}).as_string(), "OK");
}

// The partition scenario's options, on loopback (no namespace needed): a
// launch prefix that execs the server in place (`env`, as `ip netns exec`
// does) keeps the pid ours, and every bind address is bound, the first one
// being host(). 127.0.0.2 is loopback too (all of 127/8 is on lo).
TEST(EmbeddedServerTest, RunsBehindALaunchPrefixOnTheAddressesItIsGiven) {
  EmbeddedServer::Options o;
  o.launch_prefix = {"/usr/bin/env"};
  o.bind = {"127.0.0.2", "127.0.0.1"};
  EmbeddedServer server(o);
  EXPECT_EQ(server.host(), "127.0.0.2");
  Client c(server.client_options());
  EXPECT_EQ(config(c, "bind"), "127.0.0.2 127.0.0.1");
  const std::string info = c.command({"INFO", "server"}).as_string();
  EXPECT_NE(info.find("process_id:" + std::to_string(server.pid()) + "\r"), std::string::npos)
      << "the prefix did not exec the server in place";
  Client::Options second = server.client_options();
  second.host = "127.0.0.1";
  Client c2(second);
  EXPECT_EQ(c2.command({"PING"}).as_string(), "PONG");
}

TEST(EmbeddedServerTest, ALaunchPrefixThatFailsIsAClearError) {
  EmbeddedServer::Options o;
  o.launch_prefix = {"/usr/bin/env", "--no-such-option"};
  o.start_timeout = std::chrono::milliseconds(2'000);
  try {
    EmbeddedServer server(o);
    FAIL() << "a server started behind a failing prefix";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited at start"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace locklab::redis::testing
