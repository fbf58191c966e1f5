#include "distributed/adaptive_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/subscriber.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using AdaptiveLockTest = RedisTest;

AdaptiveLock::Options leased(std::chrono::milliseconds lease) {
  AdaptiveLock::Options o;
  o.lease = lease;
  return o;
}

std::int64_t numsub(Client& c, const std::string& channel) {
  return c.command({"PUBSUB", "NUMSUB", channel}).as_array().at(1).as_integer();
}


TEST_F(AdaptiveLockTest, UncontendedLockAndUnlockAreTwoRoundTripsWithoutASubscription) {
  AdaptiveLock lock(client(), key(), leased(10s));
  lock.lock();
  lock.unlock();  // loads the release script
  const auto before = client().round_trips();
  lock.lock();
  const auto mid = client().round_trips();
  EXPECT_EQ(client().command({"GET", key()}).as_string(), client().thread_owner());
  const auto mid2 = client().round_trips();
  lock.unlock();
  EXPECT_EQ(mid - before, 1u) << "one SET NX";
  EXPECT_EQ(client().round_trips() - mid2, 1u) << "one release script";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  EXPECT_EQ(client().subscriber_if_started(), nullptr);
  EXPECT_EQ(lock.spin_budget(), lock.options().initial_spin) << "a first-try win says nothing about spinning";
}

TEST_F(AdaptiveLockTest, AFailedSpinShrinksTheBudgetDownToItsFloor) {
  AdaptiveLock lock(client(), key(), leased(10s));
  Holder holder(lock);
  EXPECT_EQ(lock.spin_budget(), 5ms) << "the k6 lock table's default";
  auto previous = lock.spin_budget();
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(lock.try_lock_for(40ms));
    EXPECT_LE(lock.spin_budget(), previous);
    EXPECT_GE(lock.spin_budget(), 200us) << "below the floor";
    previous = lock.spin_budget();
  }
  EXPECT_EQ(lock.spin_budget(), 200us) << "5 ms halved 8 times, clamped at 0.2 ms";
}

TEST_F(AdaptiveLockTest, SpinWinsGrowTheBudgetUpToItsCeiling) {
  AdaptiveLock::Options o = leased(10s);
  o.spin_pause = 50us;  // looks at the release epoch between naps
  AdaptiveLock lock(client(), key(), o);
  int grew = 0;
  for (int round = 0; round < 30; ++round) {
    const auto before_budget = lock.spin_budget();
    Holder holder(lock);
    const auto attempts = lock.attempts();
    std::thread waiter([&] {
      lock.lock();
      lock.unlock();
    });
    // Release once the waiter has failed its first attempt: it is spinning.
    ASSERT_TRUE(eventually([&] { return lock.attempts() > attempts; }, 5s));
    holder.release();
    waiter.join();
    if (lock.spin_budget() > before_budget) ++grew;
    EXPECT_LE(lock.spin_budget(), 20ms) << "above the ceiling";
  }
  EXPECT_GT(lock.spin_wins(), 0u);
  EXPECT_GT(grew, 0) << "no spin win ever grew the budget";
}

TEST_F(AdaptiveLockTest, ZeroOrNegativeTimeoutsAreOneSetWithoutSpinOrSubscription) {
  AdaptiveLock lock(client(), key(), leased(10s));
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
  EXPECT_EQ(client().subscriber_if_started(), nullptr) << "a non-blocking try opened a pub/sub connection";
  EXPECT_EQ(lock.spin_budget(), lock.options().initial_spin) << "no spin, no verdict";
  client().command({"DEL", key()});
  EXPECT_TRUE(lock.try_lock_for(-1ms));
  lock.unlock();
}

TEST_F(AdaptiveLockTest, ATimedTryFailsNoEarlierThanItsDeadline) {
  AdaptiveLock lock(client(), key(), leased(10s));
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  for (auto timeout : {2ms, 150ms}) {  // cut inside the spin, and after it
    const auto start = Clock::now();
    EXPECT_FALSE(lock.try_lock_for(timeout));
    EXPECT_GE(ms_since(start), static_cast<double>(timeout.count()));
  }
}

TEST_F(AdaptiveLockTest, AParkedWaiterWakesOnTheReleaseMessageNotAtTheLeaseEnd) {
  AdaptiveLock lock(client(), key(), leased(20s));
  Holder holder(lock);
  std::thread release([&] {
    // The waiter has spun 5 ms and subscribed by then.
    ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1; }, 5s));
    std::this_thread::sleep_for(50ms);
    holder.release();
  });
  EXPECT_TRUE(lock.try_lock_for(10s));
  const auto acquired_ns = Clock::now().time_since_epoch().count();
  release.join();
  lock.unlock();
  EXPECT_LT((acquired_ns - holder.released_at_ns()) / 1e6, 1'000.0) << "woken by the lease, not the message";
  EXPECT_EQ(lock.park_wins(), 1u);
  EXPECT_GE(client().subscriber().messages_received(), 1u);
  EXPECT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 0; })) << "still subscribed";
}

TEST_F(AdaptiveLockTest, AWaiterNoticesACrashedHoldersExpiredLeaseWithoutAMessage) {
  client().command({"SET", key(), "crashed-owner", "PX", "300"});
  AdaptiveLock lock(client(), key(), leased(20s));
  const auto start = Clock::now();
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_GE(ms_since(start), 250.0);
  lock.unlock();
}

TEST_F(AdaptiveLockTest, AKilledServerWakesAParkedWaiterWithATypedErrorAndARestartedOneServesAgain) {
  AdaptiveLock lock(client(), key(), leased(20s));
  Holder holder(lock);  // keeps the lock (lease 20 s); its unlock will fail
  auto waiter = std::async(std::launch::async, [&] { return lock.try_lock_for(20s); });
  ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1; }, 5s));
  const auto killed = Clock::now();
  server().kill();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "the waiter hangs";
  EXPECT_THROW(waiter.get(), Error);
  EXPECT_LT(ms_since(killed), 10'000.0);
  EXPECT_THROW((void)lock.try_lock(), Error);
  server().restart();
  EXPECT_TRUE(lock.try_lock_for(5s)) << "a restarted server (empty, scripts gone) serves again";
  lock.unlock();  // the release script is loaded again after NOSCRIPT
  holder.release();
  EXPECT_TRUE(holder.unlock_failed()) << "the old holder's lock died with the server: LockLost";
}

TEST_F(AdaptiveLockTest, RejectsNonsensicalOptions) {
  AdaptiveLock::Options o;
  o.lease = 0ms;
  EXPECT_THROW(AdaptiveLock(client(), key(), o), std::invalid_argument);
  o = {};
  o.min_spin = 0us;
  EXPECT_THROW(AdaptiveLock(client(), key(), o), std::invalid_argument);
  o = {};
  o.initial_spin = 30ms;
  EXPECT_THROW(AdaptiveLock(client(), key(), o), std::invalid_argument);
  o = {};
  o.spin_pause = -1us;
  EXPECT_THROW(AdaptiveLock(client(), key(), o), std::invalid_argument);
  EXPECT_THROW(AdaptiveLock(client(), ""), std::invalid_argument);
}

// The outcome suite checks that such a release is a release; this one that
// it is counted.
TEST_F(AdaptiveLockTest, AReleaseWhoseWakeUpPublishIsRefusedIsCounted) {
  UserWithoutChannels user(client(), options(), "nochannels");
  Client as_user(user.options());
  AdaptiveLock lock(as_user, key());
  lock.lock();
  lock.unlock();
  EXPECT_EQ(lock.unpublished_releases(), 1u);
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

// --- fencing tokens (Options::fenced) ----------------------------------------------

AdaptiveLock::Options long_spin(std::chrono::microseconds budget) {
  AdaptiveLock::Options o = leased(20s);
  o.min_spin = o.initial_spin = o.max_spin = budget;
  return o;
}

// The spin watches this object's release epoch, not the server: while a
// holder of this process holds, the spinner sends nothing after its first
// SET NX, subscribes to nothing, and takes the lock at the release.
TEST_F(AdaptiveLockTest, ASpinnerSendsNothingToTheServerWhileALocalHolderHolds) {
  AdaptiveLock lock(client(), key(), long_spin(10s));
  Holder holder(lock);
  const auto before = lock.attempts();
  std::thread waiter([&] {
    EXPECT_TRUE(lock.try_lock_for(15s));
    lock.unlock();
  });
  EXPECT_TRUE(eventually([&] { return lock.attempts() > before; }, 5s));
  std::this_thread::sleep_for(100ms);  // the old spin sent thousands of SET NX in this time
  EXPECT_EQ(lock.attempts() - before, 1u) << "the spinner polled the server";
  EXPECT_EQ(numsub(client(), lock.channel()), 0) << "a spinner subscribed";
  holder.release();
  waiter.join();
  EXPECT_EQ(lock.attempts() - before, 2u) << "one SET NX before the spin, one at the release";
  EXPECT_EQ(lock.spin_wins(), 1u);
}

// One thread of an object spins; the next parks on the channel after its
// attempt and the re-check; newcomers queue behind it without a round
// trip. Then every waiter gets the lock.
TEST_F(AdaptiveLockTest, OneThreadPerObjectSpinsTheNextParksAndNewcomersQueue) {
  AdaptiveLock lock(client(), key(), long_spin(10s));
  Holder holder(lock);
  const auto before = lock.attempts();
  std::atomic<int> done{0};
  std::vector<std::thread> waiters;
  auto wait_once = [&] {
    if (lock.try_lock_for(15s)) {
      lock.unlock();
      done.fetch_add(1);
    }
  };
  waiters.emplace_back(wait_once);  // the spinner: one SET NX
  EXPECT_TRUE(eventually([&] { return lock.attempts() - before == 1; }, 5s));
  waiters.emplace_back(wait_once);  // parks: one SET NX, SUBSCRIBE, the re-check
  EXPECT_TRUE(eventually([&] { return lock.attempts() - before == 3 && numsub(client(), lock.channel()) == 1; }, 5s));
  waiters.emplace_back(wait_once);  // newcomers: queue behind the parked one
  waiters.emplace_back(wait_once);
  std::this_thread::sleep_for(100ms);  // the old spinners sent thousands of SET NX in this time
  EXPECT_EQ(lock.attempts() - before, 3u) << "a waiter polled the server or attempted past the queue";
  holder.release();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(done.load(), 4);
}

// The spinning attempts and the parked ones run the same fenced script: a
// winner of either kind holds the next token.
TEST_F(AdaptiveLockTest, FencedWinnersTakeTheNextTokenWhetherSpinningOrParked) {
  for (const bool park : {false, true}) {
    AdaptiveLock::Options o = leased(20s);
    o.fenced = true;
    // park: a 0.2 ms spin cannot outlast the holder; spin: a 10 s one always does.
    o.min_spin = o.initial_spin = o.max_spin = park ? std::chrono::microseconds(200) : std::chrono::microseconds(10'000'000);
    const std::string name = key(park ? "parked" : "spinning");
    AdaptiveLock lock(client(), name, o);
    Holder holder(lock);
    std::thread release([&] {
      if (park) {
        ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1; }, 5s));
      } else {
        std::this_thread::sleep_for(20ms);
      }
      holder.release();
    });
    ASSERT_TRUE(lock.try_lock_for(15s));
    release.join();
    EXPECT_EQ(lock.token(), 2) << (park ? "parked" : "spinning");
    EXPECT_EQ(FencingTokens(client(), name).current(), 2);
    EXPECT_EQ(park ? lock.park_wins() : lock.spin_wins(), 1u);
    lock.unlock();
  }
}

}  // namespace
}  // namespace locklab::redis::testing
