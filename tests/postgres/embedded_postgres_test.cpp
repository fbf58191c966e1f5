#include "postgres/embedded_postgres.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/postgres/postgres_test_support.hpp"

namespace locklab::pg::testing {
namespace {

namespace fs = std::filesystem;

std::string setting(Connection& c, const char* name) { return c.exec("SELECT current_setting($1)", {name}).text(0, 0); }

TEST(EmbeddedPostgresTest, ListensOnLoopbackWithoutDurabilityInATemporaryDirectoryAndCleansUp) {
  std::string dir;
  pid_t pid = -1;
  {
    EmbeddedPostgres server;
    dir = server.directory();
    pid = server.pid();
    EXPECT_TRUE(server.running());
    EXPECT_EQ(server.host(), "127.0.0.1");
    EXPECT_EQ(server.url(), "postgresql://locklab:" + server.password() + "@127.0.0.1:" +
                                std::to_string(server.port()) + "/postgres");
    EXPECT_EQ(server.password().size(), 32u) << "128 random bits, hex";
    EXPECT_TRUE(fs::is_directory(dir + "/data"));
    EXPECT_TRUE(fs::exists(dir + "/.s.PGSQL." + std::to_string(server.port()))) << "the unix socket is in the directory";
    EXPECT_FALSE(fs::exists(dir + "/superuser-password")) << "the password file outlived initdb";
    Connection c(server.connection_options());
    EXPECT_EQ(c.exec("SELECT 1 + 1").int64(0, 0), 2);
    EXPECT_EQ(setting(c, "listen_addresses"), "127.0.0.1");
    EXPECT_EQ(setting(c, "port"), std::to_string(server.port()));
    EXPECT_EQ(setting(c, "unix_socket_directories"), dir);
    EXPECT_EQ(setting(c, "fsync"), "off");
    EXPECT_EQ(setting(c, "synchronous_commit"), "off");
    EXPECT_EQ(setting(c, "full_page_writes"), "off");
    EXPECT_EQ(setting(c, "password_encryption"), "scram-sha-256");
  }
  EXPECT_FALSE(fs::exists(dir)) << "the temporary directory was not removed";
  EXPECT_NE(::kill(pid, 0), 0) << "the server process is still alive";
}

// PostgreSQL refuses to run as root; CI runs as root.
TEST(EmbeddedPostgresTest, TheServerRunsUnprivileged) {
  EmbeddedPostgres server;
  struct stat st {};
  ASSERT_EQ(::stat(("/proc/" + std::to_string(server.pid())).c_str(), &st), 0);
  if (::geteuid() == 0) {
    EXPECT_FALSE(server.run_as().empty());
    EXPECT_NE(st.st_uid, 0u) << "the server runs as root";
    // A $TMPDIR the server's user cannot enter (root's own, mode 0700): the
    // cluster goes to /tmp instead of failing in initdb.
    char closed[] = "/tmp/locklab-closed-XXXXXX";
    ASSERT_NE(::mkdtemp(closed), nullptr);
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("TMPDIR", closed, 1);
    {
      EmbeddedPostgres elsewhere;
      EXPECT_EQ(elsewhere.directory().rfind("/tmp/locklab-pg-", 0), 0u) << elsewhere.directory();
    }
    old != nullptr ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR");
    ::rmdir(closed);
  } else {
    EXPECT_TRUE(server.run_as().empty()) << server.run_as();
    EXPECT_EQ(st.st_uid, ::geteuid()) << "not root: the server runs as this user";
  }
}

TEST(EmbeddedPostgresTest, MissingBinariesAreATypedError) {
  EmbeddedPostgres::Options o;
  o.bindir = "/nonexistent/bin";
  expect_error([&] { EmbeddedPostgres s(o); }, Error::Kind::kNotInstalled, {"/nonexistent/bin", "postgresql"});
  ::setenv("LOCKLAB_PG_BINDIR", "/nonexistent/bin", 1);
  expect_error([] { (void)EmbeddedPostgres::find_bindir(); }, Error::Kind::kNotInstalled,
               {"LOCKLAB_PG_BINDIR=/nonexistent/bin"});
  ::unsetenv("LOCKLAB_PG_BINDIR");
  EXPECT_TRUE(fs::exists(EmbeddedPostgres::find_bindir() + "/initdb"));
}

TEST(EmbeddedPostgresTest, AServerThatCannotStartReportsItsLog) {
  EmbeddedPostgres::Options o;
  o.settings = {"no_such_setting=1"};
  o.start_timeout = std::chrono::milliseconds(5'000);
  expect_error([&] { EmbeddedPostgres s(o); }, Error::Kind::kStart, {"did not start", "no_such_setting"});
}

TEST(EmbeddedPostgresTest, StopEndsEveryConnectionWithAnIoError) {
  EmbeddedPostgres server;
  Connection c(server.connection_options());
  EXPECT_EQ(c.exec("SELECT 1").int64(0, 0), 1);
  server.stop();
  EXPECT_FALSE(server.running());
  server.stop();  // idempotent
  expect_error([&] { c.exec("SELECT 1"); }, Error::Kind::kIo, {server.host() + ":" + std::to_string(server.port())});
  expect_error([&] { Connection again(server.connection_options()); }, Error::Kind::kConnect,
               {std::to_string(server.port())}, {server.password()});
}

// Benchmarks and scenarios: LOCKLAB_PG_URL names a server, else one is started.
TEST(EmbeddedPostgresTest, ServerFromEnvOrEmbeddedStartsOneOnlyWhenNoUrlIsGiven) {
  ::unsetenv("LOCKLAB_PG_URL");
  ServerFromEnvOrEmbedded started;
  ASSERT_NE(started.embedded(), nullptr);
  EXPECT_EQ(started.describe(), "embedded");
  ::setenv("LOCKLAB_PG_URL", started.embedded()->url().c_str(), 1);
  {
    ServerFromEnvOrEmbedded named;
    EXPECT_EQ(named.embedded(), nullptr) << "a server was started although LOCKLAB_PG_URL names one";
    EXPECT_EQ(named.describe(), "postgresql://***@127.0.0.1:" + std::to_string(started.embedded()->port()) + "/postgres");
    Connection c(named.options());
    EXPECT_EQ(c.exec("SELECT current_setting('port')").text(0, 0), std::to_string(started.embedded()->port()));
  }
  ::setenv("LOCKLAB_PG_URL", "postgres://127.0.0.1:port/x", 1);
  expect_error([] { ServerFromEnvOrEmbedded bad; }, Error::Kind::kUrl, {"bad port"});
  ::unsetenv("LOCKLAB_PG_URL");
}

}  // namespace
}  // namespace locklab::pg::testing
