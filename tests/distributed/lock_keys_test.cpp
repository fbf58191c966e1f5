// lock_keys_test.cpp — every Redis lock's keys and channels (lock_keys.hpp):
// names that spelled another lock's derived key under the old
// `<name>:<role>` scheme now name independent locks; every derived key
// hashes to its lock's cluster slot; bad names are refused; and an acquire
// script that fails on a foreign value in a derived key leaves the lock key
// unwritten.
#include "distributed/lock_keys.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "benches/scenarios/batch.hpp"
#include "distributed/adaptive_lock.hpp"
#include "distributed/fair_lock.hpp"
#include "distributed/fencing.hpp"
#include "distributed/permit_semaphore.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/red_lock.hpp"
#include "distributed/spin_lock.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using LockKeysTest = RedisTest;

template <class Lock>
typename Lock::Options fenced() {
  typename Lock::Options o;
  o.fenced = true;
  return o;
}

// --- names that were another lock's derived key --------------------------------------

TEST_F(LockKeysTest, ALockNamedLikeAnotherLocksFenceCounterIsAnIndependentLock) {
  SpinLock x(client(), key("x"), fenced<SpinLock>());
  SpinLock named_like_its_counter(client(), key("x") + ":fence");
  ASSERT_TRUE(named_like_its_counter.try_lock());
  // The old scheme's counter of x WAS that lock key: INCR found an owner
  // string there and failed.
  ASSERT_TRUE(x.try_lock());
  EXPECT_EQ(x.token(), 1);
  x.unlock();
  named_like_its_counter.unlock();
  // And the other way round: x's counter exists now, the other lock is free.
  EXPECT_TRUE(named_like_its_counter.try_lock());
  named_like_its_counter.unlock();
  ASSERT_TRUE(x.try_lock());
  EXPECT_EQ(x.token(), 2);
  x.unlock();
}

TEST_F(LockKeysTest, AFairLockNamedLikeAnotherFairLocksQueueIsAnIndependentLock) {
  FairLock x(client(), key("x"));
  FairLock named_like_its_queue(client(), key("x") + ":queue");
  ASSERT_TRUE(named_like_its_queue.try_lock());
  Holder holder(x);
  // A waiter of x enqueues: under the old scheme into the other lock's key.
  EXPECT_FALSE(x.try_lock_for(20ms));
  holder.release();
  EXPECT_FALSE(holder.unlock_failed());
  named_like_its_queue.unlock();
}

TEST_F(LockKeysTest, APermitSemaphoreNamedLikeAnotherSemaphoresTimeoutSetIsIndependent) {
  PermitSemaphore x(client(), key("x"));
  PermitSemaphore named_like_its_permits(client(), key("x") + ":timeout");
  ASSERT_TRUE(x.try_set_permits(1));
  ASSERT_TRUE(named_like_its_permits.try_set_permits(1));
  auto a = x.try_acquire(0ms, 5s);
  auto b = named_like_its_permits.try_acquire(0ms, 5s);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  x.release(*a);
  named_like_its_permits.release(*b);
}

// --- acquire scripts that fail leave the lock key unwritten ---------------------------

// `setup` puts a foreign value into the fence counter of `lock`; then one
// acquire must fail with Error(kServer) and leave no lock key; and once the
// counter is removed the lock works.
template <class Lock>
void expect_failed_acquire_leaves_nothing(Client& client, Lock& lock, const std::vector<std::string>& foreign) {
  client.command(foreign);
  expect_error([&] { (void)lock.try_lock(); }, Error::Kind::kServer, {});
  EXPECT_EQ(client.command({"EXISTS", lock.name()}).as_integer(), 0) << "the script left the lock key behind";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  client.command({"DEL", lock.fence_key()});
  ASSERT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.token(), 1);
  lock.unlock();
}

TEST_F(LockKeysTest, FencedSpinLockWhoseCounterIsAHashFailsWithoutTakingTheLock) {
  SpinLock lock(client(), key(), fenced<SpinLock>());
  expect_failed_acquire_leaves_nothing(client(), lock, {"HSET", lock.fence_key(), "f", "v"});
}

TEST_F(LockKeysTest, FencedAdaptiveLockWhoseCounterIsNotAnIntegerFailsWithoutTakingTheLock) {
  AdaptiveLock lock(client(), key(), fenced<AdaptiveLock>());
  expect_failed_acquire_leaves_nothing(client(), lock, {"SET", lock.fence_key(), "not a number"});
}

TEST_F(LockKeysTest, FencedPubSubLockWhoseCounterIsAHashFailsWithoutTakingTheLock) {
  PubSubLock lock(client(), key(), fenced<PubSubLock>());
  expect_failed_acquire_leaves_nothing(client(), lock, {"HSET", lock.fence_key(), "f", "v"});
}

TEST_F(LockKeysTest, FencedPubSubLockWhoseCounterIsAtItsMaximumFailsWithoutTakingTheLock) {
  PubSubLock lock(client(), key(), fenced<PubSubLock>());
  expect_failed_acquire_leaves_nothing(client(), lock, {"SET", lock.fence_key(), "9223372036854775807"});
}

TEST_F(LockKeysTest, FencedFairLockWhoseCounterIsNotAnIntegerFailsWithoutTakingTheLock) {
  FairLock lock(client(), key(), fenced<FairLock>());
  expect_failed_acquire_leaves_nothing(client(), lock, {"SET", lock.fence_key(), "not a number"});
}

// --- the scheme ---------------------------------------------------------------------

TEST(LockKeys, DerivedKeysHaveTheDocumentedForm) {
  EXPECT_EQ(derived_key("orders", "fence"), "~{orders}~fence");
  EXPECT_EQ(derived_key("{user1}:cart", "fence"), "{user1}:cart~fence");
  EXPECT_EQ(derived_key("a{b", "queue"), "~{a{b}~queue");  // no '}': no tag, hashed whole
  EXPECT_EQ(derived_key("x", "alive:o"), derived_key_prefix("x") + "alive:o");
  EXPECT_EQ(FencingTokens::key_for("orders"), derived_key("orders", "fence"));
}

// Every name here is valid; among them the pairs that collided before
// (`x` and `x:fence`) and the pair a "wrap untagged names in braces" scheme
// would collide on (`x` and `{x}`).
const std::vector<std::string> kNames = {"x",     "x:fence", "x:channel", "{x}",    "{x}y",   "y{x}",  "a{b",
                                         "{{a}}", "x{y}z}",  "{x}{}",     "o{x}{}",  "{x}:fence", ":", "{"};
const std::vector<std::string> kRoles = {"fence", "channel", "queue", "timeout", "alive:o", "wake:o", "alive:", ""};

TEST(LockKeys, NoDerivedKeyIsALockNameAndNoTwoDerivedKeysAreEqual) {
  std::set<std::string> seen;
  for (const auto& n : kNames) {
    ASSERT_NO_THROW(check_lock_name("test", n)) << n;
    for (const auto& r : kRoles) {
      const std::string k = derived_key(n, r);
      EXPECT_TRUE(seen.insert(k).second) << k << " derived twice (" << n << ", " << r << ")";
      EXPECT_THROW(check_lock_name("test", k), std::invalid_argument) << k << " is a valid lock name";
    }
  }
}

// batch::hashed_part is Redis Cluster's rule as the batch scenario writes it
// (and checks it against CLUSTER KEYSLOT), apart from hash_tag().
TEST(LockKeys, EveryDerivedKeyIsHashedByTheTextItsLockKeyIsHashedBy) {
  using scenarios::batch::hashed_part;
  for (const auto& n : kNames) {
    for (const auto& r : kRoles) EXPECT_EQ(hashed_part(derived_key(n, r)), hashed_part(n)) << n << " / " << r;
  }
}

TEST(LockKeys, HashTagFollowsRedisCluster) {
  EXPECT_EQ(hash_tag("{user1000}.following"), "user1000");
  EXPECT_FALSE(hash_tag("foo{}{bar}").has_value());  // an empty tag: the whole key
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_FALSE(hash_tag("no-tag").has_value());
  EXPECT_FALSE(hash_tag("open{only").has_value());
}

void expect_refused(const std::function<void()>& construct, const std::string& name, const std::string& why) {
  try {
    construct();
    ADD_FAILURE() << "the name '" << name << "' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST_F(LockKeysTest, EveryLockTypeRefusesNamesItCannotDeriveKeysFrom) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty name"},
      {"a~b", "contains '~'"},
      {"{x}~fence", "contains '~'"},
      {"a}b", "contains '}' but no non-empty {hash tag}"},
      {"{}x", "contains '}' but no non-empty {hash tag}"},  // the empty tag is no tag
      {"x{}", "contains '}' but no non-empty {hash tag}"},
  };
  std::vector<Client*> one_node{&client()};
  for (const auto& [name, why] : bad) {
    SCOPED_TRACE(name);
    expect_refused([&] { SpinLock l(client(), name); }, name, why);
    expect_refused([&] { AdaptiveLock l(client(), name); }, name, why);
    expect_refused([&] { PubSubLock l(client(), name); }, name, why);
    expect_refused([&] { FairLock l(client(), name); }, name, why);
    expect_refused([&] { PermitSemaphore l(client(), name); }, name, why);
    expect_refused([&] { RedLock l(one_node, name); }, name, why);
    expect_refused([&] { FencingTokens t(client(), name); }, name, why);
    expect_refused([&] { FencedSpinLock l(client(), name); }, name, why);
  }
  for (const std::string name : {"{x}y", "a{b", "{{a}}", "x{y}z}"}) {
    SpinLock l(client(), key() + name, fenced<SpinLock>());
    ASSERT_TRUE(l.try_lock()) << name;
    l.unlock();
  }
}

// --- one slot per lock, as a cluster node computes it ----------------------------------

TEST(LockKeysOnACluster, EveryKeyAndChannelOfEveryLockHasTheLockKeysSlot) {
  // One cluster-enabled node: CLUSTER KEYSLOT is computed locally, no slots
  // need to be assigned. A standalone server refuses the command.
  EmbeddedServer::Options o;
  const int bus = scenarios::batch::LocalCluster::free_port();
  o.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
                  std::to_string(bus)};
  EmbeddedServer server(o);
  Client c(server.client_options());
  auto slot = [&](const std::string& k) { return c.command({"CLUSTER", "KEYSLOT", k}).as_integer(); };
  ASSERT_NE(slot("a"), slot("b")) << "the node does not hash";
  for (const auto& n : kNames) {
    SCOPED_TRACE(n);
    std::vector<std::string> keys;
    {
      SpinLock l(c, n, fenced<SpinLock>());
      keys.push_back(l.fence_key());
    }
    {
      AdaptiveLock l(c, n, fenced<AdaptiveLock>());
      keys.insert(keys.end(), {l.fence_key(), l.channel()});
    }
    {
      PubSubLock l(c, n, fenced<PubSubLock>());
      keys.insert(keys.end(), {l.fence_key(), l.channel()});
    }
    {
      FairLock l(c, n, fenced<FairLock>());
      keys.insert(keys.end(), {l.fence_key(), l.queue_key(), derived_key(n, "alive:" + c.thread_owner()),
                               derived_key(n, "wake:" + c.thread_owner())});
    }
    {
      PermitSemaphore l(c, n);
      keys.insert(keys.end(), {l.timeout_key(), l.channel()});
    }
    for (const auto& k : keys) EXPECT_EQ(slot(k), slot(n)) << k;
  }
}

// --- hand-offs that fail leave the queue as it was -----------------------------------

TEST_F(LockKeysTest, AFairLockHandOffWhoseCounterIsNotAnIntegerKeepsTheWaiterQueued) {
  FairLock lock(client(), key(), fenced<FairLock>());
  Holder holder(lock);
  const std::string holder_owner = client().command({"GET", key()}).as_string();
  client().command({"ZADD", lock.queue_key(), "1", "w"});
  client().command({"SET", derived_key(key(), "alive:w"), "10000f", "PX", "10000"});
  client().command({"SET", lock.fence_key(), "not a number"});
  holder.release();
  EXPECT_TRUE(holder.unlock_failed()) << "the release reported a hand-off it could not make";
  EXPECT_EQ(client().command({"ZSCORE", lock.queue_key(), "w"}).as_string(), "1") << "the waiter was dropped";
  EXPECT_EQ(client().command({"GET", key()}).as_string(), holder_owner) << "the lock changed hands";
  EXPECT_EQ(client().command({"EXISTS", derived_key(key(), "wake:w")}).as_integer(), 0);
}

}  // namespace
}  // namespace locklab::redis::testing
