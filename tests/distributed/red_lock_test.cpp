#include "distributed/red_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/embedded_server.hpp"
#include "distributed/lock_lost.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

// Three independent servers (started once per test process), one Client on
// each, every database empty at the start of each test.
class RedLockTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 3;

  static void SetUpTestSuite() { servers_ = EmbeddedServer::start_many(kNodes); }
  static void TearDownTestSuite() { servers_.clear(); }

  void SetUp() override {
    ASSERT_EQ(servers_.size(), static_cast<std::size_t>(kNodes));
    for (auto& s : servers_) {
      if (!s->running()) s->restart();  // a previous test killed it
      Client::Options o = s->client_options();
      o.connect_timeout = 200ms;
      o.command_timeout = 1s;
      clients_.push_back(std::make_unique<Client>(o));
      clients_.back()->command({"FLUSHALL"});
    }
  }
  void TearDown() override { clients_.clear(); }

  std::vector<Client*> nodes() {
    std::vector<Client*> v;
    for (auto& c : clients_) v.push_back(c.get());
    return v;
  }
  static std::string key() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("locklab:test:RedLock:") + info->name();
  }
  // The value of the lock key on node i ("" if none).
  std::string value_on(std::size_t i) {
    Reply r = clients_[i]->command({"GET", key()});
    return r.is_nil() ? std::string() : r.as_string();
  }
  static RedLock::Options fast(std::chrono::milliseconds lease = 10s) {
    RedLock::Options o;
    o.lease = lease;
    o.retry_delay = 5ms;
    return o;
  }

  static inline std::vector<std::unique_ptr<EmbeddedServer>> servers_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(RedLockTest, AcquiresWithAllNodesUpWithOneTokenEverywhereAndReleasesEverywhere) {
  RedLock lock(nodes(), key(), fast());
  EXPECT_EQ(lock.quorum(), 2u);
  EXPECT_EQ(lock.validity(), 0ms) << "not held yet";
  ASSERT_TRUE(lock.try_lock());
  const std::string token = value_on(0);
  ASSERT_FALSE(token.empty());
  for (std::size_t i = 0; i < kNodes; ++i) {
    EXPECT_EQ(value_on(i), token) << "node " << i;
    const auto pttl = clients_[i]->command({"PTTL", key()}).as_integer();
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, 10'000);
  }
  const auto v = lock.validity();
  EXPECT_GT(v, 0ms);
  EXPECT_LT(v, 10s);
  EXPECT_LE(v, 10s - 102ms) << "drift (1% of lease + 2 ms) is subtracted";
  lock.unlock();
  for (std::size_t i = 0; i < kNodes; ++i) EXPECT_EQ(value_on(i), "") << "node " << i;
  EXPECT_EQ(lock.validity(), 0ms);
  EXPECT_EQ(lock.node_errors(), 0u);
}

TEST_F(RedLockTest, AcquiresWithAMajorityUp) {
  servers_[2]->kill();
  RedLock lock(nodes(), key(), fast());
  ASSERT_TRUE(lock.try_lock_for(2s));
  EXPECT_GT(lock.validity(), 0ms);
  EXPECT_LT(lock.validity(), 10s);
  EXPECT_FALSE(value_on(0).empty());
  EXPECT_EQ(value_on(0), value_on(1));
  EXPECT_GE(lock.node_errors(), 1u);
  lock.unlock();  // confirmed on 2 of 3: a quorum
  EXPECT_EQ(value_on(0), "");
  EXPECT_EQ(value_on(1), "");
}

TEST_F(RedLockTest, RefusesWithOnlyAMinorityUpAndLeavesNothingBehind) {
  servers_[1]->kill();
  servers_[2]->kill();
  RedLock lock(nodes(), key(), fast());
  const auto start = Clock::now();
  EXPECT_FALSE(lock.try_lock_for(500ms));
  EXPECT_GE(ms_since(start), 500.0);
  EXPECT_GE(lock.attempts(), 2u) << "it retried until the deadline";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_EQ(lock.validity(), 0ms);
  EXPECT_EQ(value_on(0), "") << "the one node that said yes was released";
  EXPECT_GE(lock.node_errors(), 2 * lock.attempts());
}

TEST_F(RedLockTest, RefusesWhenAnotherOwnerHoldsAMajorityAndReleasesItsMinority) {
  clients_[0]->command({"SET", key(), "other", "PX", "10000"});
  clients_[1]->command({"SET", key(), "other", "PX", "10000"});
  RedLock lock(nodes(), key(), fast());
  EXPECT_FALSE(lock.try_lock_for(50ms));
  EXPECT_EQ(value_on(0), "other");
  EXPECT_EQ(value_on(1), "other");
  EXPECT_EQ(value_on(2), "") << "the node it won was released";
  // One foreign node only: a majority is still possible.
  clients_[1]->command({"DEL", key()});
  ASSERT_TRUE(lock.try_lock());
  EXPECT_EQ(value_on(0), "other");
  lock.unlock();
  EXPECT_EQ(value_on(0), "other") << "another owner's key is never deleted";
}

TEST_F(RedLockTest, ALeaseThatDriftEatsCanNeverBeAcquired) {
  RedLock lock(nodes(), key(), fast(2ms));  // drift = 2.02 ms > lease - elapsed
  EXPECT_FALSE(lock.try_lock_for(30ms));
  EXPECT_GE(lock.attempts(), 1u);
  for (std::size_t i = 0; i < kNodes; ++i) EXPECT_EQ(value_on(i), "") << "node " << i;
}

TEST_F(RedLockTest, ValidityCountsDownFromBelowTheLease) {
  RedLock lock(nodes(), key(), fast(1s));
  ASSERT_TRUE(lock.try_lock());
  const auto first = lock.validity();
  EXPECT_GT(first, 0ms);
  EXPECT_LE(first, 1s - 12ms);
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(lock.validity(), first - 100ms);
  std::thread([&] { EXPECT_EQ(lock.validity(), 0ms) << "another thread holds nothing"; }).join();
  lock.unlock();
}

TEST_F(RedLockTest, ExcludesThreadsDoingANonAtomicReadModifyWrite) {
  RedLock lock(nodes(), key(), fast());
  EXPECT_EQ(increment_under(lock, *clients_[0], key() + ":counter", 4, 10), 40u);
  EXPECT_EQ(clients_[0]->command({"GET", key() + ":counter"}).as_string(), "40");
}

TEST_F(RedLockTest, ExcludesThreadsWithOneNodeDown) {
  servers_[0]->kill();
  RedLock lock(nodes(), key(), fast());
  EXPECT_EQ(increment_under(lock, *clients_[1], key() + ":counter", 3, 8), 24u);
  EXPECT_EQ(clients_[1]->command({"GET", key() + ":counter"}).as_string(), "24");
}

TEST_F(RedLockTest, UnlockAfterTheLeaseExpiredIsLockLost) {
  RedLock lock(nodes(), key(), fast(60ms));
  // Timed tries: on a loaded machine one round can take longer than a 60 ms
  // lease leaves valid (the attempt then fails and is retried).
  ASSERT_TRUE(lock.try_lock_for(2s));
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(lock.validity(), 0ms);
  RedLock other(nodes(), key(), fast());  // the next owner, with a long lease
  std::thread([&] { ASSERT_TRUE(other.try_lock_for(2s)); }).join();
  try {
    lock.unlock();
    FAIL() << "unlock after expiry returned normally";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_FALSE(value_on(0).empty()) << "the new owner's keys are untouched";
}

TEST_F(RedLockTest, UnlockThatNoQuorumConfirmsIsATypedError) {
  RedLock lock(nodes(), key(), fast());
  ASSERT_TRUE(lock.try_lock());
  servers_[1]->kill();
  servers_[2]->kill();
  try {
    lock.unlock();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

TEST_F(RedLockTest, MisuseIsASystemErrorAndSendsNothing) {
  RedLock lock(nodes(), key(), fast());
  expect_not_permitted([&] { lock.unlock(); });
  ASSERT_TRUE(lock.try_lock());
  const auto before = lock.attempts();
  try {
    (void)lock.try_lock_for(10ms);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
  }
  EXPECT_EQ(lock.attempts(), before);
  lock.unlock();
}

TEST_F(RedLockTest, ZeroOrNegativeTimeoutsAreOneAttempt) {
  for (std::size_t i = 0; i < kNodes; ++i) clients_[i]->command({"SET", key(), "other", "PX", "10000"});
  RedLock lock(nodes(), key(), fast());
  for (auto timeout : {0ms, -5ms}) {
    const auto before = lock.attempts();
    EXPECT_FALSE(lock.try_lock_for(timeout));
    EXPECT_EQ(lock.attempts() - before, 1u);
  }
  EXPECT_FALSE(lock.try_lock_until(Clock::now() - 1s));
}

TEST_F(RedLockTest, RejectsNonsensicalArguments) {
  auto n = nodes();
  EXPECT_THROW(RedLock({}, key()), std::invalid_argument);
  EXPECT_THROW(RedLock({n[0], nullptr}, key()), std::invalid_argument);
  EXPECT_THROW(RedLock({n[0], n[1], n[0]}, key()), std::invalid_argument);
  EXPECT_THROW(RedLock(n, ""), std::invalid_argument);
  RedLock::Options o;
  o.lease = 0ms;
  EXPECT_THROW(RedLock(n, key(), o), std::invalid_argument);
  o = {};
  o.drift_factor = 1.0;
  EXPECT_THROW(RedLock(n, key(), o), std::invalid_argument);
  o = {};
  o.drift_floor = -1ms;
  EXPECT_THROW(RedLock(n, key(), o), std::invalid_argument);
  o = {};
  o.retry_delay = 0ms;
  EXPECT_THROW(RedLock(n, key(), o), std::invalid_argument);
  o = {};
  o.lock_timeout = 0ms;
  EXPECT_THROW(RedLock(n, key(), o), std::invalid_argument);
}

// Clients that connect on first use, one per node: what a RedLock needs to
// be built while a node is down.
std::vector<std::unique_ptr<Client>> lazy_clients(const std::vector<std::unique_ptr<EmbeddedServer>>& servers) {
  std::vector<std::unique_ptr<Client>> v;
  for (auto& s : servers) {
    Client::Options o = s->client_options();
    o.lazy_connect = true;
    o.connect_timeout = 200ms;
    o.command_timeout = 1s;
    v.push_back(std::make_unique<Client>(o));
  }
  return v;
}

std::vector<Client*> pointers(const std::vector<std::unique_ptr<Client>>& clients) {
  std::vector<Client*> v;
  for (auto& c : clients) v.push_back(c.get());
  return v;
}

TEST_F(RedLockTest, IsBuiltWhileANodeIsDownWhichCountsAsAFailedVoteUntilItReturns) {
  servers_[0]->kill();
  auto lazy = lazy_clients(servers_);  // eager Clients would throw kConnect here
  RedLock lock(pointers(lazy), key(), fast());
  ASSERT_TRUE(lock.try_lock_for(2s)) << "2 of 3 nodes are a quorum";
  EXPECT_GE(lock.node_errors(), 1u);
  EXPECT_FALSE(value_on(1).empty());
  lock.unlock();
  servers_[0]->restart();
  ASSERT_TRUE(lock.try_lock_for(2s));
  Client node0(servers_[0]->client_options());
  EXPECT_EQ(node0.command({"GET", key()}).as_string(), value_on(1)) << "the node votes again once it is back";
  lock.unlock();
}

TEST_F(RedLockTest, LockGivesUpAfterItsTimeoutListingEveryNodesVote) {
  servers_[0]->kill();
  for (std::size_t i : {1u, 2u}) clients_[i]->command({"SET", key(), "another owner", "PX", "60000"});
  auto lazy = lazy_clients(servers_);
  RedLock::Options o = fast();
  o.lock_timeout = 300ms;
  RedLock lock(pointers(lazy), key(), o);
  const auto start = Clock::now();
  auto done = std::async(std::launch::async, [&]() -> std::optional<NoQuorum> {
    try {
      lock.lock();
      return std::nullopt;
    } catch (const NoQuorum& e) {
      return e;
    }
  });
  if (done.wait_for(10s) != std::future_status::ready) {
    for (std::size_t i : {1u, 2u}) clients_[i]->command({"DEL", key()});  // let it finish
    done.wait();
    FAIL() << "lock() was still retrying after 10 s with a 300 ms lock_timeout";
  }
  const std::optional<NoQuorum> e = done.get();
  ASSERT_TRUE(e.has_value()) << "lock() acquired a lock another owner holds on 2 of 3 nodes";
  EXPECT_GE(ms_since(start), 300.0);
  ASSERT_EQ(e->votes().size(), 3u);
  EXPECT_EQ(e->votes()[0].kind, NoQuorum::Vote::Kind::kError);
  EXPECT_NE(e->votes()[0].error.find("cannot connect"), std::string::npos) << e->votes()[0].error;
  EXPECT_EQ(e->votes()[1].kind, NoQuorum::Vote::Kind::kRefused);
  EXPECT_EQ(e->votes()[2].kind, NoQuorum::Vote::Kind::kRefused);
  EXPECT_GE(e->attempts(), 2u);
  const std::string what = e->what();
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NE(what.find(servers_[i]->client_options().endpoint()), std::string::npos) << what;
  }
  EXPECT_NE(what.find("refused"), std::string::npos) << what;
  EXPECT_NE(what.find("error: cannot connect"), std::string::npos) << what;
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_EQ(value_on(1), "another owner") << "the other owner's key is untouched";
}

}  // namespace
}  // namespace locklab::redis::testing
