#include "distributed/spin_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

#include "distributed/lock_lost.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using SpinLockTest = RedisTest;

SpinLock::Options fast() {
  SpinLock::Options o;
  o.lease = 5s;
  o.retry_interval = 5ms;
  return o;
}

TEST_F(SpinLockTest, UncontendedLockAndUnlockAreTwoRoundTripsAndLeaveNothingBehind) {
  SpinLock lock(client(), key());
  const auto before = client().round_trips();
  lock.lock();
  EXPECT_EQ(client().round_trips() - before, 1u) << "one SET NX";
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(client().command({"GET", key()}).as_string(), client().thread_owner());
  const auto pttl = client().command({"PTTL", key()}).as_integer();
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 100) << "the stock test's default lease is 100 ms";
  const auto mid = client().round_trips();
  lock.unlock();
  EXPECT_EQ(client().round_trips() - mid, 2u) << "the first release also loads its script";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  const auto again = client().round_trips();
  lock.lock();
  lock.unlock();
  EXPECT_EQ(client().round_trips() - again, 2u);
}

TEST_F(SpinLockTest, ZeroOrNegativeTimeoutsAreASingleTry) {
  SpinLock lock(client(), key(), fast());
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  for (auto timeout : {0ms, -5ms}) {
    const auto before = lock.attempts();
    EXPECT_FALSE(lock.try_lock_for(timeout));
    EXPECT_EQ(lock.attempts() - before, 1u);
  }
  const auto before = lock.attempts();
  EXPECT_FALSE(lock.try_lock_until(Clock::now() - 1s));
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(lock.attempts() - before, 2u);
  client().command({"DEL", key()});
  EXPECT_TRUE(lock.try_lock_for(-1ms)) << "a single try on a free lock succeeds";
  lock.unlock();
}

TEST_F(SpinLockTest, ATimedTryPollsAtTheIntervalAndFailsNoEarlierThanTheDeadline) {
  SpinLock::Options o;
  o.retry_interval = 50ms;  // the stock test's
  SpinLock lock(client(), key(), o);
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  const auto start = Clock::now();
  EXPECT_FALSE(lock.try_lock_for(120ms));
  EXPECT_GE(ms_since(start), 120.0);
  // Attempts at 0, 50, 100 and a last one at the deadline: never more.
  EXPECT_LE(lock.attempts(), 4u);
  EXPECT_GE(lock.attempts(), 2u);
}

TEST_F(SpinLockTest, ExponentialBackoffSleepsLongerEachTime) {
  SpinLock::Options o;
  o.backoff = SpinLock::Backoff::kExponential;
  o.retry_interval = 10ms;
  o.multiplier = 2.0;
  o.max_interval = 40ms;
  SpinLock lock(client(), key(), o);
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  EXPECT_FALSE(lock.try_lock_for(200ms));
  // Sleeps 10, 20, 40, 40, 40, 40 ... ms: attempts at 0, 10, 30, 70, 110,
  // 150, 190 and the deadline. Sleeps are never shorter, so never more.
  EXPECT_LE(lock.attempts(), 8u);
  EXPECT_GE(lock.attempts(), 3u);
}

TEST_F(SpinLockTest, WaitersAcquireAfterTheHolderReleases) {
  SpinLock lock(client(), key(), fast());
  lock.lock();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    got = lock.try_lock_for(5s);
    if (got) lock.unlock();
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(got.load());
  lock.unlock();
  waiter.join();
  EXPECT_TRUE(got.load());
}

TEST_F(SpinLockTest, AKilledServerIsATypedErrorNotAHang) {
  SpinLock lock(client(), key(), fast());
  lock.lock();
  server().kill();
  const auto start = Clock::now();
  EXPECT_THROW(lock.unlock(), Error);
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW((void)lock.try_lock_for(1s), Error);
  EXPECT_LT(ms_since(start), 5'000.0);
}

TEST_F(SpinLockTest, RejectsNonsensicalOptions) {
  SpinLock::Options o;
  o.lease = 0ms;
  EXPECT_THROW(SpinLock(client(), key(), o), std::invalid_argument);
  o = {};
  o.jitter = 1.5;
  EXPECT_THROW(SpinLock(client(), key(), o), std::invalid_argument);
  EXPECT_THROW(SpinLock(client(), ""), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::redis::testing
