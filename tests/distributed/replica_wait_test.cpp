// Client::Options::wait_replicas on every lock type (replica_wait.hpp), on
// one EmbeddedReplicaSet shared by the tests of this file: the replicas are
// stalled with SIGSTOP (they then acknowledge nothing) and resumed.
#include "distributed/replica_wait.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/adaptive_lock.hpp"
#include "distributed/embedded_replica_set.hpp"
#include "distributed/fair_lock.hpp"
#include "distributed/fenced_spin_lock.hpp"
#include "distributed/permit_semaphore.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/spin_lock.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

class ReplicaWaitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_ = new EmbeddedReplicaSet(); }
  static void TearDownTestSuite() {
    delete set_;
    set_ = nullptr;
  }
  void TearDown() override {
    for (int i = 1; i < set_->nodes(); ++i) ::kill(set_->node(i).pid(), SIGCONT);
  }

  static Client::Options waiting(int replicas) {
    Client::Options o = set_->node_options(0);
    o.wait_replicas = replicas;
    return o;
  }
  static void stall(int node) { ASSERT_EQ(::kill(set_->node(node).pid(), SIGSTOP), 0); }
  static std::int64_t waits_so_far() {
    Client c(set_->node_options(0));
    const std::string stats = c.command({"INFO", "commandstats"}).as_string();
    const auto at = stats.find("cmdstat_wait:calls=");
    return at == std::string::npos ? 0 : std::stoll(stats.substr(at + 19));
  }

  static EmbeddedReplicaSet* set_;
};
EmbeddedReplicaSet* ReplicaWaitTest::set_ = nullptr;

// One way to take and give back each lock type; `acquire` returns whether
// it got it (and throws what the lock throws).
struct Taker {
  std::string type;
  std::function<bool()> acquire;
  std::function<void()> release;
};

std::vector<Taker> every_lock_type(Client& c, const std::string& prefix, std::vector<std::shared_ptr<void>>& keep) {
  std::vector<Taker> t;
  auto spin = std::make_shared<SpinLock>(c, prefix + "spin", SpinLock::Options{.lease = 10s});
  auto fenced = std::make_shared<FencedSpinLock>(c, prefix + "fenced", FencedSpinLock::Options{.lease = 10s});
  auto adaptive = std::make_shared<AdaptiveLock>(c, prefix + "adaptive");
  auto fair = std::make_shared<FairLock>(c, prefix + "fair");
  auto pubsub = std::make_shared<PubSubLock>(c, prefix + "pubsub");
  auto pubsub_lease = std::make_shared<PubSubLock>(c, prefix + "pubsub-lease");
  auto semaphore = std::make_shared<PermitSemaphore>(c, prefix + "semaphore");
  auto permit = std::make_shared<std::string>();
  keep = {spin, fenced, adaptive, fair, pubsub, pubsub_lease, semaphore, permit};
  t.push_back({"SpinLock", [=] { return spin->try_lock(); }, [=] { spin->unlock(); }});
  t.push_back({"FencedSpinLock", [=] { return fenced->try_acquire(0ms).has_value(); }, [=] { fenced->unlock(); }});
  t.push_back({"AdaptiveLock", [=] { return adaptive->try_lock_for(1s); }, [=] { adaptive->unlock(); }});
  t.push_back({"FairLock", [=] { return fair->try_lock(); }, [=] { fair->unlock(); }});
  t.push_back({"PubSubLock", [=] { pubsub->lock(); return true; }, [=] { pubsub->unlock(); }});
  t.push_back({"PubSubLock(wait, lease)", [=] { return pubsub_lease->try_lock_for(0ms, 10'000ms); },
               [=] { pubsub_lease->unlock(); }});
  t.push_back({"PermitSemaphore",
               [=] {
                 auto id = semaphore->try_acquire(0ms, 10s, 1);
                 if (id) *permit = *id;
                 return id.has_value();
               },
               [=] { semaphore->release(*permit); }});
  return t;
}

TEST_F(ReplicaWaitTest, EveryLockTypeWaitsForTheReplicasAndKeepsTheLockWhenTheyAcknowledge) {
  Client c(waiting(2));
  std::vector<std::shared_ptr<void>> keep;
  for (const Taker& t : every_lock_type(c, "ok:", keep)) {
    const std::int64_t before = waits_so_far();
    EXPECT_TRUE(t.acquire()) << t.type;
    EXPECT_EQ(waits_so_far(), before + 1) << t.type << ": one WAIT per acquire";
    EXPECT_NO_THROW(t.release()) << t.type;
  }
}

TEST_F(ReplicaWaitTest, EveryLockTypeReleasesAndThrowsNotReplicatedWhenReplicasStall) {
  stall(1);
  stall(2);
  Client c(waiting(2));
  std::vector<std::shared_ptr<void>> keep;
  for (const Taker& t : every_lock_type(c, "stalled:", keep)) {
    try {
      (void)t.acquire();
      ADD_FAILURE() << t.type << ": acquired although no replica acknowledged";
    } catch (const NotReplicated& e) {
      EXPECT_EQ(e.wanted(), 2) << t.type;
      EXPECT_EQ(e.acknowledged(), 0) << t.type;
      EXPECT_TRUE(e.released()) << t.type;
    }
  }
  // Nothing is left held: another Client (no WAIT) takes each one at once.
  Client other(set_->node_options(0));
  std::vector<std::shared_ptr<void>> keep_other;
  for (const Taker& t : every_lock_type(other, "stalled:", keep_other)) {
    EXPECT_TRUE(t.acquire()) << t.type << " was left held";
    t.release();
  }
}

TEST_F(ReplicaWaitTest, CountsTheReplicasThatAcknowledge) {
  stall(2);
  Client one(waiting(1));
  SpinLock a(one, "count:a", SpinLock::Options{.lease = 10s});
  EXPECT_TRUE(a.try_lock());
  a.unlock();
  Client both(waiting(2));
  SpinLock b(both, "count:b", SpinLock::Options{.lease = 10s});
  try {
    (void)b.try_lock();
    ADD_FAILURE() << "acquired with one replica stalled";
  } catch (const NotReplicated& e) {
    EXPECT_EQ(e.acknowledged(), 1);
    EXPECT_FALSE(b.is_held_by_current_thread());
  }
}

// Checked before anything is sent: no server needed.
TEST(ReplicaWaitOptionsTest, RefusesNonsensicalOptions) {
  Client::Options o;
  o.wait_replicas = -1;
  EXPECT_THROW(Client{o}, std::invalid_argument);
  o.wait_replicas = 1;
  o.wait_timeout = o.command_timeout;
  EXPECT_THROW(Client{o}, std::invalid_argument);
  o.wait_timeout = 0ms;
  EXPECT_THROW(Client{o}, std::invalid_argument);
}

}  // namespace
}  // namespace locklab::redis::testing
