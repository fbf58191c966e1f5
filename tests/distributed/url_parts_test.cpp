#include "distributed/url_parts.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "distributed/client.hpp"
#include "distributed/sentinel_resolver.hpp"

namespace locklab::redis::testing {
namespace {

TEST(UrlPartsTest, CredentialsEndAtTheLastAtAndSplitAtTheFirstColon) {
  std::string_view rest = "alice:p@ss:word@host:7000/2";
  std::string user, password;
  detail::take_url_credentials(rest, user, password);
  EXPECT_EQ(user, "alice");
  EXPECT_EQ(password, "p@ss:word");
  EXPECT_EQ(rest, "host:7000/2");
}

TEST(UrlPartsTest, ALonePasswordSetsOnlyThePasswordAndNoAtTakesNothing) {
  std::string_view rest = "s3cret@h";
  std::string user = "kept", password;
  detail::take_url_credentials(rest, user, password);
  EXPECT_EQ(user, "kept");
  EXPECT_EQ(password, "s3cret");
  EXPECT_EQ(rest, "h");

  rest = "h:1/0";
  password = "kept too";
  detail::take_url_credentials(rest, user, password);
  EXPECT_EQ(rest, "h:1/0");
  EXPECT_EQ(user, "kept");
  EXPECT_EQ(password, "kept too");
}

TEST(UrlPartsTest, ANumberIsTheWholeTextOrATypedErrorNamingIt) {
  EXPECT_EQ(detail::parse_url_number("6379", "redis URL", "port", "redis://h:6379"), 6379);
  EXPECT_EQ(detail::parse_url_number("-1", "redis URL", "database number", "redis://h/-1"), -1);  // range: the caller's
  for (const char* bad : {"", "+1", " 1", "1 ", "1x", "0x10", "99999999999"}) {
    try {
      (void)detail::parse_url_number(bad, "redis URL", "port", "redis://***@h");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "redis URL 'redis://***@h': bad port '" + std::string(bad) + "'");
    }
  }
}

// The reason the parts are shared: a redis:// and a redis+sentinel:// URL
// with the same credentials give the same user and password.
TEST(UrlPartsTest, BothUrlReadersTakeTheSameCredentials) {
  const auto direct = Client::Options::from_url("redis://alice:p@ss:word@h:7000");
  const auto sentinel = parse_sentinel_url("redis+sentinel://alice:p@ss:word@h:26380/m");
  EXPECT_EQ(direct.user, "alice");
  EXPECT_EQ(direct.password, "p@ss:word");
  EXPECT_EQ(sentinel.user, direct.user);
  EXPECT_EQ(sentinel.password, direct.password);
}

}  // namespace
}  // namespace locklab::redis::testing
