// postgres_test_support.hpp — what every PostgreSQL test shares: its own
// EmbeddedPostgres (127.0.0.1, a free port, no durability, a temporary
// directory), started once per test binary and stopped by RAII even when a
// test fails; a fresh Connection per test; a check for typed errors.
//
// Tests never read LOCKLAB_PG_URL: they create, fill and drop tables, and
// stop their server, which must never be anyone else's.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "postgres/connection.hpp"
#include "postgres/embedded_postgres.hpp"

namespace locklab::pg::testing {

// Runs `f`, which must throw pg::Error of `kind` whose message contains
// every string of `mentions` and none of `never` (a password).
template <class F>
void expect_error(F&& f, Error::Kind kind, const std::vector<std::string>& mentions,
                  const std::vector<std::string>& never = {}) {
  try {
    f();
    ADD_FAILURE() << "no pg::Error (" << Error::kind_name(kind) << ") was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << Error::kind_name(e.kind()) << ": " << e.what();
    const std::string what = e.what();
    for (const auto& m : mentions) EXPECT_NE(what.find(m), std::string::npos) << m << " in " << what;
    for (const auto& n : never) EXPECT_EQ(what.find(n), std::string::npos) << n << " leaked into " << what;
  }
}

class PostgresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<EmbeddedPostgres>(); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(server_ && server_->running()) << "the embedded server did not start";
    db_ = std::make_unique<Connection>(server_->connection_options());
  }
  void TearDown() override { db_.reset(); }

  static EmbeddedPostgres& server() { return *server_; }
  Connection& db() { return *db_; }
  // A table name unique to the running test (lower case, SQL-safe).
  static std::string table(const std::string& suffix = "t") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("t_") + info->name() + "_" + suffix;
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return name;
  }

  static inline std::unique_ptr<EmbeddedPostgres> server_;
  std::unique_ptr<Connection> db_;
};

}  // namespace locklab::pg::testing
