// my_redis_spin_lock_test.cpp — the checks of the exercise redis_spin_lock,
// against a private redis-server this test starts on 127.0.0.1 (a free port,
// no persistence): the lab's conformance suite (mutual exclusion, try_lock
// that never blocks, timed tries, no lost wake-ups, std wrappers), then the
// Redis-specific rules: one SET NX PX per attempt, the token, the lease,
// and a release that never deletes another owner's key. Run with
//   exercises/check.sh redis_spin_lock
#include <my_redis_spin_lock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "distributed/embedded_server.hpp"
#include "tests/distributed/redis_test_support.hpp"
#include "tests/primitives/lock_conformance.hpp"

namespace locklab::exercises {
namespace {

// The conformance suite default-constructs its locks: this one binds each to
// a fresh key on one server and Client shared by the process (started by the
// first lock, from the test's main thread, stopped at exit).
redis::Client& conformance_client() {
  struct Shared {
    redis::EmbeddedServer server;
    redis::Client client{server.client_options()};
  };
  static Shared shared;
  return shared.client;
}

std::string fresh_key() {
  static std::atomic<int> n{0};
  return "locklab:exercise:conformance:" + std::to_string(n.fetch_add(1));
}

// Lease 60 s: longer than any hold in the suite (a hold past the lease would
// make unlock() throw LockLost, correctly, and fail the check).
struct ConformanceRedisLock : MyRedisSpinLock {
  ConformanceRedisLock()
      : MyRedisSpinLock(conformance_client(), fresh_key(),
                        Options{.lease = std::chrono::seconds(60), .retry_interval = std::chrono::milliseconds(1)}) {}
};

}  // namespace
}  // namespace locklab::exercises

using MyRedisSpinLocks = ::testing::Types<locklab::exercises::ConformanceRedisLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyRedisSpinLock, LockConformance, MyRedisSpinLocks);

namespace locklab::redis::testing {
namespace {

using exercises::MyRedisSpinLock;
using MyRedisSpinLockTest = RedisTest;

MyRedisSpinLock::Options lease(std::chrono::milliseconds l) {
  return MyRedisSpinLock::Options{.lease = l, .retry_interval = 2ms};
}

TEST_F(MyRedisSpinLockTest, AnUncontendedLockIsOneSetOfThisThreadsTokenWithALease) {
  MyRedisSpinLock lock(client(), key(), lease(5s));
  const auto before = client().round_trips();
  lock.lock();
  EXPECT_EQ(client().round_trips() - before, 1u) << "one command: SET key token NX PX lease";
  const Reply value = client().command({"GET", key()});
  ASSERT_FALSE(value.is_nil()) << "lock() returned but the key does not exist";
  EXPECT_EQ(value.as_string(), client().thread_owner()) << "the key must hold the token Client::thread_owner()";
  const auto pttl = client().command({"PTTL", key()}).as_integer();
  EXPECT_GT(pttl, 0) << "the key has no expiry (PTTL " << pttl << "): a crashed holder would block everyone forever";
  EXPECT_LE(pttl, 5'000) << "the expiry is longer than the lease";
  lock.unlock();
}

TEST_F(MyRedisSpinLockTest, UnlockDeletesTheKeyInOneRoundTrip) {
  MyRedisSpinLock lock(client(), key(), lease(5s));
  lock.lock();
  lock.unlock();  // the first release may also load its script
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "unlock() left the key behind";
  lock.lock();
  const auto before = client().round_trips();
  lock.unlock();
  EXPECT_EQ(client().round_trips() - before, 1u)
      << "a release that GETs and then DELs from the client is two round trips, and another client can take the "
         "key between them: compare and delete in one script";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(MyRedisSpinLockTest, TheLeaseExpiresWhateverTheHolderDoes) {
  MyRedisSpinLock lock(client(), key(), lease(50ms));
  lock.lock();
  std::this_thread::sleep_for(150ms);  // a holder that stalls past its lease
  bool other_got_it = false;
  std::thread([&] {
    other_got_it = lock.try_lock_for(2s);
    if (other_got_it) lock.unlock();
  }).join();
  EXPECT_TRUE(other_got_it) << "the key outlived its 50 ms lease: was PX set?";
}

TEST_F(MyRedisSpinLockTest, UnlockAfterTheLeaseRanOutIsLockLostAndSparesTheNewOwnersKey) {
  MyRedisSpinLock lock(client(), key(), lease(50ms));
  lock.lock();
  std::this_thread::sleep_for(150ms);  // our lease runs out...
  std::string new_owner;
  std::thread([&] {  // ...and someone else takes the lock
    if (lock.try_lock_for(2s)) new_owner = client().thread_owner();
  }).join();
  ASSERT_FALSE(new_owner.empty()) << "the lock could not be taken after the lease ran out";
  try {
    lock.unlock();
    ADD_FAILURE() << "unlock() after the lease ran out returned normally: the critical section was not protected";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other()) << "another owner holds the key now";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected redis::LockLost, got: " << e.what();
  }
  const Reply value = client().command({"GET", key()});
  ASSERT_FALSE(value.is_nil()) << "our late unlock() deleted the new owner's key";
  EXPECT_EQ(value.as_string(), new_owner) << "the key changed under the new owner";
}

TEST_F(MyRedisSpinLockTest, UnlockByAThreadThatNeverHeldItDeletesNothing) {
  MyRedisSpinLock lock(client(), key(), lease(5s));
  lock.lock();
  std::thread([&] {
    EXPECT_ANY_THROW(lock.unlock()) << "a thread that never held the lock released it";
  }).join();
  const Reply value = client().command({"GET", key()});
  ASSERT_FALSE(value.is_nil()) << "a non-holder's unlock() deleted the holder's key";
  EXPECT_EQ(value.as_string(), client().thread_owner());
  lock.unlock();
}

TEST_F(MyRedisSpinLockTest, ExcludesThreadsDoingANonAtomicReadModifyWriteOfARedisKey) {
  MyRedisSpinLock lock(client(), key(), lease(5s));
  EXPECT_EQ(increment_under(lock, client(), key("counter"), 4, 25), 100u);
  EXPECT_EQ(client().command({"GET", key("counter")}).as_string(), "100") << "updates were lost";
}

TEST_F(MyRedisSpinLockTest, TimedTriesPollAndGiveUpNoEarlierThanTheDeadline) {
  MyRedisSpinLock lock(client(), key(), lease(5s));
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  auto before = client().round_trips();
  EXPECT_FALSE(lock.try_lock_for(0ms));
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(client().round_trips() - before, 2u) << "a zero timeout and try_lock() are one attempt each";
  before = client().round_trips();
  const auto start = Clock::now();
  EXPECT_FALSE(lock.try_lock_for(60ms));
  EXPECT_GE(ms_since(start), 60.0) << "gave up before the deadline";
  EXPECT_GE(client().round_trips() - before, 2u) << "a 60 ms try polled only once";
  client().command({"DEL", key()});
  EXPECT_TRUE(lock.try_lock_for(1s)) << "a free lock was not taken";
  lock.unlock();
}

}  // namespace
}  // namespace locklab::redis::testing
