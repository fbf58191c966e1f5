#include "distributed/sentinel_resolver.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

TEST(SentinelUrlTest, ParsesSentinelsMasterCredentialsAndDb) {
  const auto o = Client::Options::from_url("redis+sentinel://alice:pw@10.0.0.1:26380,sentinel-b,[::1]:7/orders/3");
  ASSERT_EQ(o.sentinels.size(), 3u);
  EXPECT_EQ(o.sentinels[0], (std::pair<std::string, int>{"10.0.0.1", 26380}));
  EXPECT_EQ(o.sentinels[1], (std::pair<std::string, int>{"sentinel-b", kDefaultSentinelPort}));
  EXPECT_EQ(o.sentinels[2], (std::pair<std::string, int>{"[::1]", 7}));
  EXPECT_EQ(o.sentinel_master, "orders");
  EXPECT_EQ(o.db, 3);
  EXPECT_EQ(o.user, "alice");
  EXPECT_EQ(o.password, "pw");
  // Until Sentinel answers, the address is the first Sentinel's.
  EXPECT_EQ(o.endpoint(), "10.0.0.1:26380");
  const auto one = parse_sentinel_url("redis+sentinel://127.0.0.1:5000/m");
  EXPECT_EQ(one.sentinels.size(), 1u);
  EXPECT_EQ(one.db, 0);
  EXPECT_TRUE(one.password.empty());
}

TEST(SentinelUrlTest, RefusesMalformedUrlsNamingTheProblemWithoutThePassword) {
  const std::pair<const char*, const char*> bad[] = {
      {"redis+sentinel://h:1", "no master name"},
      {"redis+sentinel://h:1/", "no master name"},
      {"redis+sentinel://h:1//2", "no master name"},
      {"redis+sentinel://h:x/m", "bad Sentinel port 'x'"},
      {"redis+sentinel://h:0/m", "port out of range"},
      {"redis+sentinel://h:70000/m", "port out of range"},
      {"redis+sentinel://h:1,,h:2/m", "without a host"},
      {"redis+sentinel://:1/m", "without a host"},
      {"redis+sentinel://h:1/m/x", "bad database number 'x'"},
      {"redis+sentinel://u:secret@h:1/m/-1", "negative database number"},
      {"sentinel://h:1/m", "must start with redis+sentinel://"},
  };
  for (const auto& [url, why] : bad) {
    try {
      (void)parse_sentinel_url(url);
      ADD_FAILURE() << url << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << url << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)Client::Options::from_url("redis+sentinel://h:1"), std::invalid_argument);
}

TEST(SentinelResolverTest, NoSentinelNamingAPrimaryIsAConnectErrorWithEachAnswer) {
  // One "Sentinel" that is a plain redis-server (it refuses the SENTINEL
  // command) and one port nobody listens on (a stopped server's).
  EmbeddedServer plain;
  std::unique_ptr<EmbeddedServer> gone = std::make_unique<EmbeddedServer>();
  const int dead_port = gone->port();
  gone.reset();
  Client::Options o;
  o.sentinels = {{"127.0.0.1", plain.port()}, {"127.0.0.1", dead_port}};
  o.sentinel_master = "nobody";
  o.connect_timeout = 200ms;
  o.command_timeout = 500ms;
  try {
    (void)resolve_primary(o);
    ADD_FAILURE() << "resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kConnect);
    const std::string what = e.what();
    EXPECT_NE(what.find("names a primary for 'nobody'"), std::string::npos) << what;
    EXPECT_NE(what.find(plain.host() + ":" + std::to_string(plain.port()) + ": answered"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot connect to 127.0.0.1:" + std::to_string(dead_port)), std::string::npos) << what;
  }
  EXPECT_THROW(Client{o}, Error);
  EXPECT_THROW((void)resolve_primary(Client::Options{}), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::redis::testing
