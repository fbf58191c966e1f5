#include "postgres/connection.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/postgres/postgres_test_support.hpp"

namespace locklab::pg::testing {
namespace {

using ConnectionTest = PostgresTest;

// A loopback port nothing listens on: bound, read back, closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST_F(ConnectionTest, ParameterisedRoundTripKeepsValuesApartFromTheSql) {
  const std::string t = table();
  db().exec("CREATE TABLE " + t + " (id bigint PRIMARY KEY, name text)");
  const std::string hostile = "x'); DROP TABLE " + t + "; --";
  const std::uint64_t before = db().round_trips();
  EXPECT_EQ(db().exec("INSERT INTO " + t + " VALUES ($1, $2), ($3, $4)", {1, hostile, 2L, std::nullopt}).affected(), 2);
  EXPECT_EQ(db().round_trips(), before + 1) << "one statement, one round trip";
  const Result r = db().exec("SELECT id, name FROM " + t + " ORDER BY id");
  ASSERT_EQ(r.rows(), 2);
  ASSERT_EQ(r.columns(), 2);
  EXPECT_EQ(r.int64(0, 0), 1);
  EXPECT_EQ(r.text(0, 1), hostile) << "the value was stored as text, not run as SQL";
  EXPECT_EQ(r.int64(1, 0), 2);
  EXPECT_TRUE(r.is_null(1, 1));
  EXPECT_EQ(r.get(1, 1), std::nullopt);
  EXPECT_EQ(db().exec("UPDATE " + t + " SET name = 'y' WHERE id > $1", {0}).affected(), 2);
  EXPECT_EQ(db().exec("UPDATE " + t + " SET name = 'y' WHERE id > $1", {5}).affected(), 0);
  EXPECT_GT(db().backend_pid(), 0);
}

TEST_F(ConnectionTest, AMalformedUrlIsAUrlErrorThatShowsNoPassword) {
  expect_error([] { Connection c("mysql://locklab:pw@127.0.0.1/db"); }, Error::Kind::kUrl,
               {"postgresql://", "mysql://***@127.0.0.1/db"}, {":pw@"});
  expect_error([] { Connection c("postgresql://u:s3cret@127.0.0.1:notaport/db"); }, Error::Kind::kUrl,
               {"bad port 'notaport'", "postgresql://***@127.0.0.1:notaport/db"}, {"s3cret"});
  expect_error([] { Connection c("postgresql://127.0.0.1:70000/db"); }, Error::Kind::kUrl, {"bad port '70000'"});
  expect_error([] { Connection c("postgresql://127.0.0.1/db?no_such_option=1&password=s3cret"); }, Error::Kind::kUrl,
               {"no_such_option", "password=***"}, {"s3cret"});
  expect_error([] { Connection c{std::string()}; }, Error::Kind::kUrl, {"URL ''"});
}

TEST_F(ConnectionTest, NothingListeningIsAConnectError) {
  const int port = closed_port();
  expect_error([&] { Connection c("postgresql://locklab:s3cret@127.0.0.1:" + std::to_string(port) + "/postgres"); },
               Error::Kind::kConnect, {"cannot connect to 127.0.0.1:" + std::to_string(port)}, {"s3cret"});
}

TEST_F(ConnectionTest, AWrongPasswordOrAnUnknownRoleIsAnAuthError) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(server().port());
  expect_error([&] { Connection c(server().url_for(server().user(), "wrong-s3cret")); }, Error::Kind::kAuth,
               {"authentication failed at " + endpoint, "password authentication failed"}, {"wrong-s3cret"});
  expect_error([&] { Connection c(server().url_for("nobody_here", "s3cret")); }, Error::Kind::kAuth,
               {"authentication failed at " + endpoint}, {"s3cret"});
  // No password at all where scram-sha-256 wants one.
  expect_error([&] { Connection c("postgresql://locklab@127.0.0.1:" + std::to_string(server().port()) + "/postgres"); },
               Error::Kind::kAuth, {endpoint});
}

TEST_F(ConnectionTest, AStatementTheServerRefusesIsAQueryErrorWithItsSqlstate) {
  const std::string t = table();
  db().exec("CREATE TABLE " + t + " (id bigint PRIMARY KEY)");
  db().exec("INSERT INTO " + t + " VALUES ($1)", {1});
  try {
    db().exec("INSERT INTO " + t + " VALUES ($1)", {1});
    ADD_FAILURE() << "a duplicate key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kQuery) << e.what();
    EXPECT_EQ(e.sqlstate(), "23505") << e.what();  // unique_violation
    EXPECT_NE(std::string(e.what()).find("duplicate key"), std::string::npos) << e.what();
  }
  try {
    db().exec("SELEC 1");
    ADD_FAILURE() << "a syntax error was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kQuery) << e.what();
    EXPECT_EQ(e.sqlstate(), "42601") << e.what();  // syntax_error
  }
  EXPECT_EQ(db().exec("SELECT count(*) FROM " + t).int64(0, 0), 1) << "the connection is usable after a kQuery";
}

TEST_F(ConnectionTest, TheStatementTimeoutBoundsEveryStatement) {
  Connection::Options o = server().connection_options();
  o.statement_timeout = std::chrono::milliseconds(100);
  Connection c(o);
  try {
    c.exec("SELECT pg_sleep(10)");
    ADD_FAILURE() << "a 10 s statement outlived a 100 ms statement_timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kQuery) << e.what();
    EXPECT_EQ(e.sqlstate(), "57014") << e.what();  // query_canceled
  }
}

TEST_F(ConnectionTest, ResultAccessorsRefuseWhatIsNotThere) {
  const Result r = db().exec("SELECT 'seven', NULL::text");
  expect_error([&] { (void)r.int64(0, 0); }, Error::Kind::kProtocol, {"expected an integer", "seven"});
  expect_error([&] { (void)r.text(0, 1); }, Error::Kind::kProtocol, {"NULL"});
  expect_error([&] { (void)r.get(1, 0); }, Error::Kind::kProtocol, {"row 1"});
  expect_error([&] { (void)r.get(0, 2); }, Error::Kind::kProtocol, {"column 2"});
}

TEST_F(ConnectionTest, TheEnvironmentNamesAnotherServerAndItsPassword) {
  ::unsetenv("LOCKLAB_PG_URL");
  ::unsetenv("LOCKLAB_PG_PASSWORD");
  EXPECT_FALSE(Connection::Options::from_env().has_value());
  // The URL's password is wrong; LOCKLAB_PG_PASSWORD's, full of characters
  // a URL must escape, is the right one and wins.
  const std::string role = table("role");
  const std::string password = "p@ss/w:rd%&?= #";
  db().exec("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'");
  ::setenv("LOCKLAB_PG_URL", server().url_for(role, "wrong").c_str(), 1);
  ::setenv("LOCKLAB_PG_PASSWORD", password.c_str(), 1);
  auto o = Connection::Options::from_env();
  ASSERT_TRUE(o.has_value());
  {
    Connection c(*o);
    EXPECT_EQ(c.exec("SELECT current_user").text(0, 0), role);
  }
  db().exec("DROP ROLE " + role);
  ::setenv("LOCKLAB_PG_URL", "redis://127.0.0.1:6379", 1);
  expect_error([] { (void)Connection::Options::from_env(); }, Error::Kind::kUrl, {"postgresql://"});
  ::unsetenv("LOCKLAB_PG_URL");
  ::unsetenv("LOCKLAB_PG_PASSWORD");
}

TEST(ConnectionUrlTest, RedactedUrlHidesUserAndPassword) {
  using O = Connection::Options;
  EXPECT_EQ(O::redacted_url("postgresql://u:pw@h:5432/db"), "postgresql://***@h:5432/db");
  EXPECT_EQ(O::redacted_url("postgresql://h/db"), "postgresql://h/db");
  EXPECT_EQ(O::redacted_url("postgresql://h/db?password=pw&sslmode=disable"),
            "postgresql://h/db?password=***&sslmode=disable");
  EXPECT_EQ(O::redacted_url("postgresql://u:p@w@h/db?application_name=a@b"), "postgresql://***@h/db?application_name=a@b");
}

}  // namespace
}  // namespace locklab::pg::testing
