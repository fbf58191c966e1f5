#include "distributed/fair_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using FairLockTest = RedisTest;

FairLock::Options leased(std::chrono::milliseconds lease, std::chrono::milliseconds queue_lease = 30s) {
  FairLock::Options o;
  o.lease = lease;
  o.queue_lease = queue_lease;
  return o;
}

std::int64_t queued(Client& c, const FairLock& lock) {
  return c.command({"ZCARD", lock.queue_key()}).as_integer();
}

// Every key the lock created (the lock, its queue, alive and wake keys).
std::int64_t keys_of(Client& c, const std::string& name) {
  return static_cast<std::int64_t>(c.command({"KEYS", name + "*"}).as_array().size() +
                                   c.command({"KEYS", derived_key_prefix(name) + "*"}).as_array().size());
}


TEST_F(FairLockTest, UncontendedLockAndUnlockAreTwoRoundTripsAndLeaveNoKeys) {
  FairLock lock(client(), key(), leased(10s));
  lock.lock();
  lock.unlock();  // loads both scripts
  const auto before = client().round_trips();
  lock.lock();
  lock.unlock();
  EXPECT_EQ(client().round_trips() - before, 2u);
  EXPECT_EQ(keys_of(client(), key()), 0);
  EXPECT_EQ(lock.handoffs(), 0u);
}

// Exclusion itself is in redis_lock_outcomes.hpp; here: contention leaves
// none of the queue's keys behind.
TEST_F(FairLockTest, ContendedThreadsLeaveNoQueueEntryAliveOrWakeKeyBehind) {
  FairLock lock(client(), key(), leased(10s, 1s));
  EXPECT_EQ(increment_under(lock, client(), key("counter"), 8, 25), 200u);
  EXPECT_EQ(client().command({"GET", key("counter")}).as_string(), "200");
  EXPECT_EQ(keys_of(client(), key()), 0) << "a queue entry, alive or wake key was left behind";
}

// The child half of the killed-waiter tests: run only via spawn_self.
// Queues up behind the parent's holder, to be killed there.
TEST(FairLockChild, DISABLED_Worker) {
  const auto task = child_task();
  const char* lease_ms = std::getenv("LOCKLAB_CHILD_LEASE_MS");
  ASSERT_TRUE(task && lease_ms);
  Client c(task->options);
  FairLock lock(c, task->lock, leased(std::chrono::milliseconds(std::atoi(lease_ms)), 400ms));
  lock.lock();
  ADD_FAILURE() << "the child was meant to be killed while queued";
}

TEST_F(FairLockTest, WaitersAcquireInArrivalOrderEachWokenOnceWithoutAHerd) {
  constexpr int kWaiters = 6;
  FairLock lock(client(), key(), leased(20s));
  Holder holder(lock);
  std::mutex order_mu;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      lock.lock();
      {
        std::lock_guard g(order_mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(2ms);  // the next waiters keep waiting meanwhile
      lock.unlock();
    });
    // Known arrival order: the next waiter starts once this one is queued.
    ASSERT_TRUE(eventually([&] { return queued(client(), lock) == i + 1; }, 5s));
  }
  const auto attempts = lock.attempts();
  holder.release();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(lock.attempts(), attempts) << "a waiter ran the acquire script again: a hand-off did not wake it";
  EXPECT_EQ(lock.handoffs(), static_cast<std::uint64_t>(kWaiters)) << "one hand-off per release";
  EXPECT_EQ(keys_of(client(), key()), 0);
}

TEST_F(FairLockTest, NoBargingANewcomerNeverTakesAFreeLockALiveWaiterIsOwed) {
  // A live waiter at the head of the queue and a free lock (its owner's
  // lease ran out, so no release handed it on): a try_lock must not take it
  // and hands it to the head instead.
  client().command({"ZADD", derived_key(key(), "queue"), "1", "queued-waiter"});
  client().command({"SET", derived_key(key(), "alive:queued-waiter"), "5000", "PX", "10000"});
  FairLock lock(client(), key(), leased(10s));
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(client().command({"GET", key()}).as_string(), "queued-waiter");
  EXPECT_EQ(client().command({"LLEN", derived_key(key(), "wake:queued-waiter")}).as_integer(), 1) << "the head was not woken";
  EXPECT_GT(client().command({"PTTL", key()}).as_integer(), 4'000) << "granted with the waiter's own lease";
  EXPECT_EQ(queued(client(), lock), 0) << "the try enqueued itself";
}

TEST_F(FairLockTest, ZeroOrNegativeTimeoutsAreOneAttemptNeverQueued) {
  FairLock lock(client(), key(), leased(10s));
  Holder holder(lock);
  const auto round_trips = client().round_trips();
  const auto attempts = lock.attempts();
  EXPECT_FALSE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_for(0ms));
  EXPECT_FALSE(lock.try_lock_for(-5ms));
  EXPECT_FALSE(lock.try_lock_until(Clock::now() - 1s));
  EXPECT_EQ(lock.attempts() - attempts, 4u);
  EXPECT_EQ(client().round_trips() - round_trips, 4u) << "no BLPOP, no leave";
  EXPECT_EQ(queued(client(), lock), 0);
  holder.release();
  EXPECT_TRUE(lock.try_lock_for(-1ms)) << "a single try on a free lock succeeds";
  lock.unlock();
}

TEST_F(FairLockTest, ATimedOutWaiterFailsNoEarlierThanItsDeadlineAndLeavesTheQueue) {
  FairLock lock(client(), key(), leased(10s, 90ms));  // refreshes every 30 ms meanwhile
  Holder holder(lock);
  const auto start = Clock::now();
  EXPECT_FALSE(lock.try_lock_for(150ms));
  EXPECT_GE(ms_since(start), 150.0);
  EXPECT_GE(lock.attempts(), 3u) << "the waiter did not refresh its entry";
  EXPECT_EQ(queued(client(), lock), 0);
  holder.release();
  EXPECT_FALSE(holder.unlock_failed());
  EXPECT_EQ(keys_of(client(), key()), 0) << "an alive or wake key was left behind";
}

TEST_F(FairLockTest, AHandOffThatRacesWithADeadlineIsPassedOnNotKept) {
  FairLock lock(client(), key(), leased(10s));
  Holder holder(lock);
  std::promise<std::string> first_token;
  auto first = std::async(std::launch::async, [&] {
    first_token.set_value(client().thread_owner());
    return lock.try_lock_for(400ms);
  });
  const std::string token = first_token.get_future().get();
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 1; }, 5s));
  std::atomic<bool> second_got{false};
  std::thread second([&] {
    if (lock.try_lock_for(10s)) {
      second_got = true;
      lock.unlock();
    }
  });
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 2; }, 5s));
  // Ownership reaches the first waiter without its wake-up (as if the
  // hand-off landed just after its BLPOP timed out): at its deadline it must
  // pass it on instead of leaving the lock owned by nobody alive.
  client().command({"SET", key(), token, "XX", "PX", "10000"});
  client().command({"ZREM", lock.queue_key(), token});
  EXPECT_FALSE(first.get());
  second.join();
  EXPECT_TRUE(second_got.load()) << "the raced hand-off was not passed on";
  holder.release();
  EXPECT_TRUE(holder.unlock_failed()) << "the holder's lock was taken away: LockLost";
  EXPECT_EQ(keys_of(client(), key()), 0);
}

TEST_F(FairLockTest, AWakeUpAfterReleaseIsPromptNotAtARefreshOrLease) {
  FairLock lock(client(), key(), leased(20s));  // refresh every 10 s
  Holder holder(lock);
  std::thread release([&] {
    ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 1; }, 5s));
    std::this_thread::sleep_for(50ms);
    holder.release();
  });
  EXPECT_TRUE(lock.try_lock_for(10s));
  const auto acquired_ns = Clock::now().time_since_epoch().count();
  release.join();
  lock.unlock();
  EXPECT_LT((acquired_ns - holder.released_at_ns()) / 1e6, 1'000.0);
  EXPECT_EQ(lock.attempts(), 2u) << "holder + one enqueueing attempt; the hand-off itself needs none";
}

TEST_F(FairLockTest, AHolderThatDiesFreesTheLockToTheHeadAfterItsLease) {
  client().command({"SET", key(), "crashed-owner", "PX", "300"});
  FairLock lock(client(), key(), leased(10s, 30s));
  const auto start = Clock::now();
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_GE(ms_since(start), 250.0);
  lock.unlock();
}

TEST_F(FairLockTest, AWaiterKilledInTheQueueIsSkippedOnceItsEntryExpired) {
  FairLock lock(client(), key(), leased(10s, 300ms));
  Holder holder(lock);
  const pid_t child = spawn_self("FairLockChild.DISABLED_Worker",
                                 child_env(server().port(), key(), {"LOCKLAB_CHILD_LEASE_MS=20000"}));
  ASSERT_GT(child, 0);
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 1; }, 10s));
  auto waiter = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(10s);
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 2; }, 5s));
  ::kill(child, SIGKILL);
  EXPECT_NE(wait_child(child, 5s), 0);
  std::this_thread::sleep_for(600ms);  // > the child's queue_lease (400 ms)
  const auto released = Clock::now();
  holder.release();
  ASSERT_EQ(waiter.wait_for(8s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  // Handed to the dead child, the lock would have waited for its 20 s lease.
  EXPECT_LT(ms_since(released), 5'000.0);
  EXPECT_EQ(keys_of(client(), key()), 0);
}

TEST_F(FairLockTest, AWaiterKilledRightBeforeItsTurnBlocksTheQueueAtMostItsLease) {
  FairLock lock(client(), key(), leased(10s, 150ms));  // our waiter refreshes every 50 ms
  Holder holder(lock);
  const pid_t child = spawn_self("FairLockChild.DISABLED_Worker",
                                 child_env(server().port(), key(), {"LOCKLAB_CHILD_LEASE_MS=700"}));
  ASSERT_GT(child, 0);
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 1; }, 10s));
  auto waiter = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(10s);
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 2; }, 5s));
  ::kill(child, SIGKILL);
  EXPECT_NE(wait_child(child, 5s), 0);
  // Release at once: the child's entry (queue_lease 400 ms) still looks
  // alive, so the hand-off goes to the dead child, with its 700 ms lease.
  const auto released = Clock::now();
  holder.release();
  ASSERT_EQ(waiter.wait_for(8s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  const double waited = ms_since(released);
  EXPECT_LT(waited, 5'000.0) << "the dead waiter blocked the queue past its lease";
  // Either the dead child got the hand-off (then we waited for its lease)
  // or its entry had already expired on a slow machine (then at once).
  EXPECT_TRUE(waited >= 600.0 || waited < 400.0) << waited;
}

TEST_F(FairLockTest, AKeyOfTheWrongTypeIsAServerErrorQuotingRedis) {
  client().command({"HSET", key(), "a", "hash"});
  FairLock lock(client(), key(), leased(10s));
  try {
    (void)lock.try_lock_for(100ms);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
}

TEST_F(FairLockTest, AKilledServerWakesAQueuedWaiterWithATypedErrorAndARestartedOneServesAgain) {
  FairLock lock(client(), key(), leased(20s));
  Holder holder(lock);
  auto waiter = std::async(std::launch::async, [&] { return lock.try_lock_for(20s); });
  ASSERT_TRUE(eventually([&] { return queued(client(), lock) == 1; }, 5s));
  std::this_thread::sleep_for(20ms);  // inside BLPOP by now
  const auto killed = Clock::now();
  server().kill();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "the waiter hangs";
  EXPECT_THROW(waiter.get(), Error);
  EXPECT_LT(ms_since(killed), 10'000.0);
  EXPECT_THROW((void)lock.try_lock(), Error);
  server().restart();
  EXPECT_TRUE(lock.try_lock_for(5s)) << "a restarted server (empty, scripts gone) serves again";
  lock.unlock();
  holder.release();
  EXPECT_TRUE(holder.unlock_failed()) << "the old holder's lock died with the server: LockLost";
}

TEST_F(FairLockTest, RejectsNonsensicalOptions) {
  FairLock::Options o;
  o.lease = 0ms;
  EXPECT_THROW(FairLock(client(), key(), o), std::invalid_argument);
  o = {};
  o.queue_lease = 2ms;
  EXPECT_THROW(FairLock(client(), key(), o), std::invalid_argument);
  EXPECT_THROW(FairLock(client(), ""), std::invalid_argument);
}

// --- fencing tokens (Options::fenced) ----------------------------------------------

FairLock::Options fenced(std::chrono::milliseconds lease, bool on = true) {
  FairLock::Options o = leased(lease);
  o.fenced = on;
  return o;
}

TEST_F(FairLockTest, AFencedHandOffDeliversTheTokenWithTheWakeUpInNoExtraRoundTrip) {
  Client other(options());
  FairLock holder_lock(client(), key(), fenced(10s));
  FairLock waiter_lock(other, key(), fenced(10s));
  Holder holder(holder_lock);
  std::promise<std::int64_t> token;
  std::thread waiter([&] {
    waiter_lock.lock();
    token.set_value(waiter_lock.token());
    waiter_lock.unlock();
  });
  ASSERT_TRUE(eventually([&] { return queued(client(), holder_lock) == 1; }, 5s));
  EXPECT_EQ(FencingTokens(client(), key()).current(), 1) << "queueing takes no token";
  holder.release();
  auto f = token.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), 2);
  waiter.join();
  EXPECT_EQ(waiter_lock.attempts(), 1u) << "the token came with the BLPOP, not from another attempt";
  EXPECT_EQ(holder_lock.handoffs(), 1u);
  EXPECT_EQ(FencingTokens(client(), key()).current(), 2);
}

TEST_F(FairLockTest, TheHandOffFollowsTheWaitersFencedNotTheReleasers) {
  Client other(options());
  FairLock plain(client(), key(), fenced(10s, false));
  FairLock tokened(other, key(), fenced(10s));
  // An unfenced releaser hands a fenced waiter its token...
  {
    Holder holder(plain);
    std::promise<std::int64_t> token;
    std::thread waiter([&] {
      tokened.lock();
      token.set_value(tokened.token());
      // ...and a fenced releaser hands an unfenced waiter none.
      std::thread unfenced_waiter([&] {
        plain.lock();
        EXPECT_THROW((void)plain.token(), std::logic_error);
        plain.unlock();
      });
      EXPECT_TRUE(eventually([&] { return queued(other, tokened) == 1; }, 5s));
      tokened.unlock();
      unfenced_waiter.join();
    });
    ASSERT_TRUE(eventually([&] { return queued(client(), plain) == 1; }, 5s));
    holder.release();
    auto f = token.get_future();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(f.get(), 1);
    waiter.join();
  }
  EXPECT_EQ(tokened.handoffs(), 1u);
  EXPECT_EQ(FencingTokens(client(), key()).current(), 1) << "the unfenced waiter's hand-off took no token";
}

// A hand-off that lands while its waiter is between two BLPOPs (set up by
// hand: this thread queued with a fenced entry) is collected by the next
// attempt, token included; if the wake list is gone, that attempt takes a
// fresh token while it holds the lock.
TEST_F(FairLockTest, AHandOffCollectedByALaterAttemptCarriesItsToken) {
  FairLock lock(client(), key(), fenced(10s));
  const std::string me = client().thread_owner();
  for (const bool lose_the_wake_list : {false, true}) {
    {
      Holder holder(lock);
      client().command({"ZADD", lock.queue_key(), "1", me});
      client().command({"SET", derived_key(key(), "alive:" + me), "10000f", "PX", "10000"});
      holder.release();
      EXPECT_FALSE(holder.unlock_failed());
    }
    ASSERT_EQ(client().command({"GET", key()}).as_string(), me) << "handed to this thread";
    const std::int64_t pushed = std::stoll(client().command({"LINDEX", derived_key(key(), "wake:" + me), "0"}).as_string());
    EXPECT_EQ(pushed, FencingTokens(client(), key()).current()) << "the hand-off took it";
    if (lose_the_wake_list) client().command({"DEL", derived_key(key(), "wake:" + me)});
    ASSERT_TRUE(lock.try_lock());
    EXPECT_EQ(lock.token(), lose_the_wake_list ? pushed + 1 : pushed);
    EXPECT_EQ(lock.token(), FencingTokens(client(), key()).current());
    EXPECT_EQ(client().command({"EXISTS", derived_key(key(), "wake:" + me)}).as_integer(), 0);
    lock.unlock();
  }
  EXPECT_EQ(keys_of(client(), key()), 1) << "only the counter stays";
}

}  // namespace
}  // namespace locklab::redis::testing
