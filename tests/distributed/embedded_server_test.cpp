#include "distributed/embedded_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>

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

}  // namespace
}  // namespace locklab::redis::testing
