#include "distributed/pub_sub_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/subscriber.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using PubSubLockTest = RedisTest;

PubSubLock::Options leased(std::chrono::milliseconds lease) {
  PubSubLock::Options o;
  o.lease = lease;
  return o;
}

std::int64_t numsub(Client& c, const std::string& channel) {
  return c.command({"PUBSUB", "NUMSUB", channel}).as_array().at(1).as_integer();
}

TEST_F(PubSubLockTest, UncontendedLockAndUnlockAreTwoRoundTrips) {
  PubSubLock lock(client(), key(), leased(10s));
  lock.lock();
  lock.unlock();  // loads both scripts
  const auto before = client().round_trips();
  lock.lock();
  lock.unlock();
  EXPECT_EQ(client().round_trips() - before, 2u);
  EXPECT_EQ(client().subscriber_if_started(), nullptr) << "no waiter, no pub/sub connection";
}

TEST_F(PubSubLockTest, IsReentrantWithAHoldCountInTheHash) {
  PubSubLock lock(client(), key(), leased(10s));
  lock.lock();
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.hold_count(), 3);
  EXPECT_EQ(client().command({"HGET", key(), client().thread_owner()}).as_string(), "3");
  lock.unlock();
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 1);
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 1) << "still held once";
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

// A child made by fork() inherits the Client and this lock object, hold
// record included; it must still count as another owner: it cannot unlock
// the parent's hold nor re-enter it, through the inherited object or a new
// one, and the parent's hold is intact afterwards.
TEST_F(PubSubLockTest, AForkedChildIsNotTheOwnerOfTheParentsHold) {
  PubSubLock lock(client(), key(), leased(10s));
  lock.lock();
  const std::string parent_owner = client().thread_owner();
  const int status = run_in_forked_child([&] {
    EXPECT_EQ(lock.hold_count(), 0) << "the child sees the parent's hold as its own";
    EXPECT_FALSE(lock.try_lock()) << "the child re-entered the parent's hold";
    expect_not_permitted([&] { lock.unlock(); }, "the child unlocked the parent's hold");
    PubSubLock fresh(client(), key(), leased(10s));
    EXPECT_FALSE(fresh.try_lock());
    EXPECT_THROW(fresh.unlock(), std::system_error);
  });
  EXPECT_EQ(status, 0) << "the forked child's checks failed (its output is above)";
  EXPECT_EQ(lock.hold_count(), 1);
  Reply fields = client().command({"HGETALL", key()});
  ASSERT_EQ(fields.as_array().size(), 2u) << "one owner field in the hash";
  EXPECT_EQ(fields.as_array()[0].as_string(), parent_owner);
  EXPECT_EQ(fields.as_array()[1].as_string(), "1");
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

// The child half of the SIGKILL test: run only via spawn_self. Takes the
// lock in watchdog mode, says so, and waits to be killed.
TEST(PubSubLockChild, DISABLED_Worker) {
  const auto task = child_task();
  ASSERT_TRUE(task);
  Client c(task->options);
  PubSubLock::Options w;
  w.watchdog_lease = 600ms;
  PubSubLock lock(c, task->lock, w);
  lock.lock();
  c.command({"SET", task->lock + ":child-holds", "1"});
  std::this_thread::sleep_for(30s);
}

TEST_F(PubSubLockTest, AHolderKilledWithSigkillFreesTheLockAfterTheWatchdogLease) {
  const pid_t child = spawn_self("PubSubLockChild.DISABLED_Worker",
                                 child_env(server().port(), key()));
  ASSERT_GT(child, 0);
  ASSERT_TRUE(eventually([&] { return !client().command({"GET", key() + ":child-holds"}).is_nil(); }, 10s));
  // The child's watchdog keeps renewing past its 600 ms lease ...
  std::this_thread::sleep_for(900ms);
  PubSubLock lock(client(), key(), leased(10s));
  EXPECT_FALSE(lock.try_lock()) << "the watchdog let the lease run out";
  ::kill(child, SIGKILL);
  const auto killed = Clock::now();
  EXPECT_NE(wait_child(child, 5s), 0);
  // ... and once it is dead, the lock frees within one watchdog lease.
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_LT(ms_since(killed), 3'000.0);
  lock.unlock();
}

TEST_F(PubSubLockTest, NonBlockingTriesNeverSubscribe) {
  PubSubLock lock(client(), key(), leased(10s));
  std::promise<void> held, release;
  std::thread holder([&] {
    lock.lock();
    held.set_value();
    release.get_future().wait();
    lock.unlock();
  });
  held.get_future().wait();
  EXPECT_FALSE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_for(0ms));
  EXPECT_FALSE(lock.try_lock_for(-5ms));
  EXPECT_FALSE(lock.try_lock_until(Clock::now() - 1s));
  EXPECT_FALSE(lock.try_lock_async(0ms, 5s).get());
  EXPECT_EQ(numsub(client(), lock.channel()), 0);
  EXPECT_EQ(client().subscriber_if_started(), nullptr) << "not even a pub/sub connection was opened";
  release.set_value();
  holder.join();
}

TEST_F(PubSubLockTest, AWaiterWakesOnTheReleaseMessageNotAtTheLeaseEnd) {
  PubSubLock lock(client(), key(), leased(20s));
  std::promise<void> held;
  std::atomic<std::int64_t> released_at_ns{0};
  std::thread holder([&] {
    lock.lock();
    held.set_value();
    std::this_thread::sleep_for(200ms);  // the waiter is subscribed by now
    released_at_ns = Clock::now().time_since_epoch().count();
    lock.unlock();
  });
  held.get_future().wait();
  EXPECT_TRUE(lock.try_lock_for(10s));
  const auto acquired_ns = Clock::now().time_since_epoch().count();
  holder.join();
  lock.unlock();
  // Prompt: far below the 20 s lease (a missed message would wait for it).
  EXPECT_LT((acquired_ns - released_at_ns.load()) / 1e6, 1'000.0);
  EXPECT_GE(client().subscriber().messages_received(), 1u);
}

TEST_F(PubSubLockTest, ManyWaitersShareOneSubscription) {
  PubSubLock lock(client(), key(), leased(20s));
  lock.lock();
  std::vector<std::thread> waiters;
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    waiters.emplace_back([&] {
      if (lock.try_lock_for(10s)) {
        lock.unlock();
        done.fetch_add(1);
      }
    });
  }
  ASSERT_TRUE(eventually([&] {
    Subscriber* s = client().subscriber_if_started();
    return s != nullptr && numsub(client(), lock.channel()) == 1 && s->channel_count() == 1;
  }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(numsub(client(), lock.channel()), 1) << "one connection listens for all 10 waiters";
  EXPECT_EQ(client().subscriber().commands_sent(), 1u) << "one SUBSCRIBE";
  lock.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(done.load(), 10);
  EXPECT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 0; })) << "the last waiter unsubscribes";
}

TEST_F(PubSubLockTest, ANewcomerQueuesBehindThisProcesssWaitersWithoutAnAttempt) {
  PubSubLock lock(client(), key(), leased(20s));
  lock.lock();
  std::mutex mu;
  std::vector<int> order;
  auto waiter = [&](int id) {
    if (lock.try_lock_for(10s)) {
      {
        std::lock_guard g(mu);
        order.push_back(id);
      }
      lock.unlock();
    }
  };
  std::thread first(waiter, 1);  // attempts, subscribes, re-checks, waits
  ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1 && lock.attempts() == 3; }));
  std::thread second(waiter, 2);  // joins the live subscription behind `first`
  ASSERT_TRUE(eventually([&] { return lock.skipped_attempts() == 1; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(lock.attempts(), 3u) << "the second waiter sent no attempt";
  lock.unlock();  // one message: the oldest waiter's; its release wakes the other
  first.join();
  second.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(lock.attempts(), 5u) << "one attempt each after its wake-up";
  EXPECT_EQ(lock.skipped_attempts(), 1u);
}

TEST_F(PubSubLockTest, AQueuedNewcomerWaitsNoLongerThanItsLeaseWhenNoMessageComes) {
  // The holder's lease runs out while it still holds by its own record: the
  // key expires and nothing is published. The waiter ahead gives up first,
  // so only the newcomer's own bound (its lease, 3 s) wakes it: it takes
  // the lock then, long before its deadline.
  PubSubLock lock(client(), key(), leased(3s));
  lock.lock();
  std::thread listener([&] { EXPECT_FALSE(lock.try_lock_for(1s)); });  // keeps the channel live, then leaves
  ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1 && lock.attempts() == 3; }));
  std::atomic<bool> got{false};
  std::atomic<double> waited_ms{0};
  std::thread newcomer([&] {
    const auto start = Clock::now();
    if (lock.try_lock_for(15s)) {
      waited_ms = ms_since(start);
      got = true;
      lock.unlock();
    }
  });
  ASSERT_TRUE(eventually([&] { return lock.skipped_attempts() == 1; }));
  listener.join();  // after 1 s: only the newcomer listens now
  newcomer.join();
  ASSERT_TRUE(got.load());
  // About 3 s (the lease); without the bound it sleeps to its deadline
  // (15 s) and takes the lock in the last attempt there.
  EXPECT_LT(waited_ms.load(), 10'000.0) << "the newcomer slept past its lease to its deadline";
  EXPECT_THROW(lock.unlock(), LockLost);
}

TEST_F(PubSubLockTest, TheWatchdogKeepsTheLockPastItsLeaseAndStopsAtUnlock) {
  PubSubLock::Options o;
  o.watchdog_lease = 300ms;
  PubSubLock lock(client(), key(), o);
  lock.lock();
  std::this_thread::sleep_for(800ms);  // > 2 leases
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 1);
  EXPECT_GT(client().command({"PTTL", key()}).as_integer(), 0);
  EXPECT_GE(lock.watchdog_renewals(), 2u);
  lock.unlock();
  // A renewal the server ran just before the release may still be counted
  // by the renewal timer thread after unlock() returns: let it land (one round
  // trip), then no more may come (the period is 100 ms).
  std::this_thread::sleep_for(50ms);
  const auto renewals = lock.watchdog_renewals();
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(lock.watchdog_renewals(), renewals) << "renewing after unlock";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(PubSubLockTest, TheWatchdogStopsWhenTheLockIsLostAndUnlockSaysSo) {
  PubSubLock::Options o;
  o.watchdog_lease = 150ms;
  PubSubLock lock(client(), key(), o);
  lock.lock();
  client().command({"DEL", key()});  // e.g. an operator, or a failover that lost it
  std::this_thread::sleep_for(200ms);
  const auto renewals = lock.watchdog_renewals();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(lock.watchdog_renewals(), renewals);
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "the watchdog re-created the key";
  EXPECT_THROW(lock.unlock(), LockLost);
}

TEST_F(PubSubLockTest, UnlockAfterTheLeaseExpiredIsLockLostAndDeletesNothing) {
  PubSubLock lock(client(), key(), leased(50ms));
  lock.lock();
  std::this_thread::sleep_for(120ms);
  std::thread([&] { ASSERT_TRUE(lock.try_lock()); }).join();  // another owner now (it never unlocks)
  try {
    lock.unlock();
    FAIL();
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());
  }
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 1) << "the other owner's hash was deleted";
}

// A re-entry asks Redis whether this owner still holds the key: a hold
// whose lease ran out is reported, never silently replaced by a new one
// (whose inner unlock() would end the outer critical section's "hold").
TEST_F(PubSubLockTest, RelockingAfterTheLeaseRanOutIsLockLostNotANewHold) {
  PubSubLock lock(client(), key(), leased(200ms));
  lock.lock();
  std::this_thread::sleep_for(450ms);  // the lease runs out; nobody takes it
  try {
    lock.lock();
    FAIL() << "the re-entry after the lease ran out returned: a new hold the outer section knows nothing of";
  } catch (const LockLost& e) {
    EXPECT_FALSE(e.taken_by_other());
  }
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "the refused re-entry created a hold";
  EXPECT_EQ(lock.hold_count(), 0);
}

TEST_F(PubSubLockTest, RelockingAfterAnotherOwnerTookTheLockIsLockLostWithoutADoubleGrant) {
  PubSubLock lock(client(), key(), leased(200ms));
  lock.lock();
  std::this_thread::sleep_for(450ms);  // the lease runs out; another client takes it
  Client other_client(options());
  PubSubLock other(other_client, key(), leased(10s));
  ASSERT_TRUE(other.try_lock());
  try {
    (void)lock.try_lock_for(500ms);
    FAIL() << "the re-entry returned instead of reporting that the outer hold is gone";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());
  }
  EXPECT_EQ(client().command({"HGET", key(), other_client.thread_owner()}).as_string(), "1")
      << "the other owner's hold was changed";
  EXPECT_TRUE(client().command({"HGET", key(), client().thread_owner()}).is_nil()) << "both hold it";
  EXPECT_EQ(lock.hold_count(), 0);
  other.unlock();
}

// After a re-entry found the hold gone, each outer hold's unlock() throws
// LockLost too (no round trip), then unlock() is a non-holder's again; the
// lock takes new holds at any point, nested ones included.
TEST_F(PubSubLockTest, AfterARelockFoundTheHoldGoneEachOuterUnlockIsLockLostAndTheLockWorksAgain) {
  PubSubLock lock(client(), key(), leased(200ms));
  lock.lock();
  lock.lock();  // two outer holds
  std::this_thread::sleep_for(450ms);
  EXPECT_THROW(lock.lock(), LockLost);
  // A new hold inside the outer sections: an ordinary outermost acquisition.
  lock.lock();
  EXPECT_EQ(lock.hold_count(), 1);
  EXPECT_EQ(client().command({"HGET", key(), client().thread_owner()}).as_string(), "1");
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  const auto before = client().round_trips();
  for (int outer = 0; outer < 2; ++outer) {
    try {
      lock.unlock();
      FAIL() << "outer unlock " << outer << " returned normally";
    } catch (const LockLost& e) {
      EXPECT_FALSE(e.taken_by_other());
    }
  }
  EXPECT_EQ(client().round_trips(), before) << "an owed unlock sent a command";
  expect_not_permitted([&] { lock.unlock(); }, "a third unlock returned normally");
  lock.lock();
  EXPECT_EQ(lock.hold_count(), 1);
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(PubSubLockTest, AfterAnInnerUnlockFoundTheHoldGoneTheOuterUnlockIsLockLostToo) {
  PubSubLock lock(client(), key(), leased(10s));
  lock.lock();
  lock.lock();
  client().command({"DEL", key()});  // e.g. an operator, or a failover that lost it
  EXPECT_THROW(lock.unlock(), LockLost);
  EXPECT_EQ(lock.hold_count(), 0);
  try {
    lock.unlock();
    FAIL() << "the outer unlock returned normally";
  } catch (const LockLost& e) {
    EXPECT_FALSE(e.taken_by_other());
  }
  EXPECT_THROW(lock.unlock(), std::system_error) << "every owed unlock was made";
}

// The watchdog variant of the lost acquire reply (the shared fault suite
// runs PubSubLock with a fixed lease): the owner's next lock() must not
// re-enter a hold nobody knows of, which one unlock() would leave to the
// watchdog to renew for ever.
TEST_F(PubSubLockTest, ALostAcquireReplyInWatchdogModeLeavesNoHoldForTheWatchdog) {
  PubSubLock::Options o;  // watchdog mode
  o.watchdog_lease = 900ms;
  o.fenced = true;        // the token counter shows that the server ran the lost acquire
  Client owner_client(impatient_options());
  PubSubLock lock(owner_client, key(), o);
  lock.lock();
  lock.unlock();  // loads the scripts
  ASSERT_TRUE(lose_the_reply([&] { lock.lock(); }));
  ASSERT_TRUE(eventually([&] { return FencingTokens(client(), key()).current() == 2; }, 5s))
      << "the server did not run the lost acquire";
  ASSERT_TRUE(lock.try_lock_for(2s));
  EXPECT_EQ(client().command({"HGET", key(), owner_client.thread_owner()}).as_string(), "1");
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "a hold survived the unlock, renewed by the watchdog";
}

// A lost re-entry reply: the server counts 2, the owner records 1. The
// restore brings the server back to 1, so the owner's one unlock() frees it.
TEST_F(PubSubLockTest, ALostReentryReplyLeavesTheServerCountingWhatTheOwnerRecords) {
  Client owner_client(impatient_options());
  PubSubLock lock(owner_client, key(), leased(10s));
  lock.lock();
  ASSERT_TRUE(lose_the_reply([&] { lock.lock(); }));
  EXPECT_EQ(lock.hold_count(), 1);
  // The server ran the lost re-entry as the sleep ended (a command sent now
  // is served after it); then its count must come back to the owner's.
  EXPECT_EQ(client().command({"PING"}).as_string(), "PONG");
  EXPECT_TRUE(eventually(
      [&] { return client().command({"HGET", key(), owner_client.thread_owner()}).as_string() == "1"; }, 5s))
      << "the server counts more holds than the owner records";
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "the owner's one unlock() left a hold behind";
}

TEST_F(PubSubLockTest, UnlockByANonHolderIsOperationNotPermittedAndSendsNothing) {
  PubSubLock lock(client(), key(), leased(10s));
  lock.lock();
  std::thread([&] {
    const auto before = client().round_trips();
    expect_not_permitted([&] { lock.unlock(); });
    EXPECT_EQ(client().round_trips(), before);
  }).join();
  EXPECT_EQ(lock.hold_count(), 1);
  lock.unlock();
}

TEST_F(PubSubLockTest, AKeyOfTheWrongTypeIsAServerErrorQuotingRedis) {
  client().command({"SET", key(), "a string, not a hash"});
  PubSubLock lock(client(), key(), leased(10s));
  try {
    (void)lock.try_lock_for(100ms);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
}

TEST_F(PubSubLockTest, ATimedTryFailsNoEarlierThanItsDeadline) {
  PubSubLock lock(client(), key(), leased(10s));
  client().command({"HSET", key(), "someone-else", "1"});
  client().command({"PEXPIRE", key(), "10000"});
  const auto start = Clock::now();
  EXPECT_FALSE(lock.try_lock_for(150ms));
  EXPECT_GE(ms_since(start), 150.0);
}

TEST_F(PubSubLockTest, AWaiterNoticesAnExpiredLeaseWithoutAMessage) {
  // A holder that crashed publishes nothing: the waiter waits for the PTTL.
  client().command({"HSET", key(), "crashed-owner", "1"});
  client().command({"PEXPIRE", key(), "200"});
  PubSubLock lock(client(), key(), leased(10s));
  const auto start = Clock::now();
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_GE(ms_since(start), 150.0);
  lock.unlock();
}

// The acquire script used to run HINCRBY and then a PEXPIRE that Redis
// refused: the hash stayed without a TTL, a lock nobody could ever take.
TEST_F(PubSubLockTest, ALeaseBeyondTheMaximumIsInvalidArgumentAndNeverLeavesAKeyWithoutTtl) {
  const std::chrono::milliseconds huge = std::chrono::years(1000);
  const auto before = client().round_trips();
  EXPECT_THROW(PubSubLock(client(), key(), leased(huge)), std::invalid_argument);
  PubSubLock::Options o;
  o.watchdog_lease = huge;
  EXPECT_THROW(PubSubLock(client(), key(), o), std::invalid_argument);
  PubSubLock lock(client(), key(), leased(10s));
  EXPECT_THROW((void)lock.try_lock_for(0ms, huge), std::invalid_argument);
  EXPECT_THROW((void)lock.try_lock_for(1s, std::chrono::milliseconds::max()), std::invalid_argument);
  EXPECT_THROW((void)lock.try_lock_async(0ms, huge), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before) << "a refused lease reached the server";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  EXPECT_EQ(lock.hold_count(), 0);
  // The maximum itself is a lease like any other.
  ASSERT_TRUE(lock.try_lock_for(0ms, detail::kMaxDuration));
  EXPECT_GT(client().command({"PTTL", key()}).as_integer(), 0);
  lock.unlock();
}

// A holder whose lease outlasts the steady clock's range (10^13 ms, which
// Redis accepts from another client): the waiter's wake-up time saturates
// instead of overflowing into the past (back-to-back attempts until the
// deadline).
TEST_F(PubSubLockTest, AWaiterForAHolderWithAHugeLeaseSleepsInsteadOfRetryingBackToBack) {
  client().command({"HSET", key(), "another-owner", "1"});
  client().command({"PEXPIRE", key(), "10000000000000"});
  PubSubLock lock(client(), key(), leased(10s));
  EXPECT_FALSE(lock.try_lock_for(300ms));
  EXPECT_LE(lock.attempts(), 3u) << "arrival, the re-check after subscribing, the deadline";
}

// The release script deletes the hash before it publishes; a user allowed
// the key but no channel (Redis 7's default for a new ACL user) got NOPERM
// from that PUBLISH, and unlock() threw although the lock was free.
TEST_F(PubSubLockTest, UnlockByAUserWithoutChannelPermissionReleasesTheLock) {
  UserWithoutChannels user(client(), options(), "nochannels");
  Client as_user(user.options());
  PubSubLock lock(as_user, key(), leased(10s));
  lock.lock();
  lock.lock();
  lock.unlock();  // re-entered: no PUBLISH yet
  EXPECT_EQ(lock.unpublished_releases(), 0u);
  EXPECT_NO_THROW(lock.unlock());
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "the lock was not released";
  EXPECT_EQ(lock.unpublished_releases(), 1u) << "the refused wake-up is counted";
}

// The same user as a waiter: its SUBSCRIBE is refused. The waiter gets the
// server's error at once, typed, instead of a timeout after
// connect_timeout + command_timeout (2.5 s here).
TEST_F(PubSubLockTest, ASubscriptionTheServerRefusesFailsTheWaiterWithTheServersErrorWithinOneSecond) {
  UserWithoutChannels user(client(), options(), "nochannels");
  Client as_user(user.options());
  PubSubLock owner_side(client(), key(), leased(10s));
  Holder holder(owner_side);
  PubSubLock lock(as_user, key(), leased(10s));
  const auto start = Clock::now();
  try {
    (void)lock.try_lock_for(10s);
    FAIL() << "the waiter did not see the refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer) << e.what();
    EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << e.what();
  }
  EXPECT_LT(ms_since(start), 1'000.0);
}

TEST_F(PubSubLockTest, AsyncTryCompletesWithoutACallerThreadAndTheCallerOwnsTheLock) {
  PubSubLock lock(client(), key(), leased(10s));
  std::promise<void> held, release;
  std::thread holder([&] {
    lock.lock();
    held.set_value();
    release.get_future().wait();
    lock.unlock();
  });
  held.get_future().wait();
  std::future<bool> f = lock.try_lock_async(10s, 10s);
  EXPECT_EQ(f.wait_for(100ms), std::future_status::timeout) << "the lock is held";
  release.set_value();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(f.get());
  EXPECT_TRUE(lock.is_held_by_current_thread());
  lock.unlock();
  holder.join();
  // Many at once, from one thread: each completes; they queue on one worker.
  std::vector<std::future<bool>> many;
  lock.lock();
  for (int i = 0; i < 20; ++i) many.push_back(lock.try_lock_async(5s, 10s));  // re-entries
  for (auto& m : many) EXPECT_TRUE(m.get());
  EXPECT_EQ(lock.hold_count(), 21);
  for (int i = 0; i < 21; ++i) lock.unlock();
}

TEST_F(PubSubLockTest, AKilledServerWakesAWaiterWithATypedErrorBeforeItsDeadline) {
  PubSubLock lock(client(), key(), leased(20s));
  std::promise<void> held;
  std::thread holder([&] {
    lock.lock();
    held.set_value();
  });
  held.get_future().wait();
  holder.join();  // it keeps the lock (lease 20 s)
  std::promise<void> waiting;
  auto waiter = std::async(std::launch::async, [&] {
    waiting.set_value();
    return lock.try_lock_for(20s);
  });
  waiting.get_future().wait();
  ASSERT_TRUE(eventually([&] { return numsub(client(), lock.channel()) == 1; }));
  const auto killed = Clock::now();
  server().kill();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "the waiter hangs";
  EXPECT_THROW(waiter.get(), Error);
  EXPECT_LT(ms_since(killed), 10'000.0);
}

// --- fencing tokens (Options::fenced) ----------------------------------------------

TEST_F(PubSubLockTest, FencedReentryKeepsTheOutermostTokenAndEachNewHoldTakesANewOne) {
  PubSubLock::Options o = leased(10s);
  o.fenced = true;
  PubSubLock lock(client(), key(), o);
  FencingTokens counter(client(), key());
  lock.lock();
  EXPECT_EQ(lock.token(), 1);
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.token(), 1) << "re-entry issues no token";
  EXPECT_EQ(counter.current(), 1);
  lock.unlock();
  lock.unlock();
  EXPECT_EQ(lock.token(), 1) << "still held once";
  lock.unlock();
  EXPECT_THROW((void)lock.token(), std::system_error);
  lock.lock();
  EXPECT_EQ(lock.token(), 2);
  lock.unlock();
  // A hold whose lease ran out is gone: taking the lock again is an
  // outermost acquisition, with a new token, even though this object still
  // counted the old hold.
  PubSubLock::Options short_lease = leased(50ms);
  short_lease.fenced = true;
  PubSubLock lapsing(client(), key("lapsing"), short_lease);
  lapsing.lock();
  EXPECT_EQ(lapsing.token(), 1);
  std::this_thread::sleep_for(120ms);
  EXPECT_THROW(lapsing.lock(), LockLost) << "a re-entry asks Redis, and the hold is gone";
  EXPECT_THROW(lapsing.unlock(), LockLost) << "the outer hold's unlock reports the loss too";
  lapsing.lock();
  EXPECT_EQ(lapsing.hold_count(), 1);
  EXPECT_EQ(lapsing.token(), 2);
  lapsing.unlock();
}

TEST_F(PubSubLockTest, FencedWatchdogAndAsyncAcquisitionsGiveTheCallerItsToken) {
  PubSubLock::Options o;  // watchdog mode
  o.fenced = true;
  PubSubLock lock(client(), key(), o);
  std::promise<void> held, release;
  std::thread holder([&] {
    lock.lock();
    EXPECT_EQ(lock.token(), 1);
    held.set_value();
    release.get_future().wait();
    lock.unlock();
  });
  held.get_future().wait();
  std::future<bool> f = lock.try_lock_async(10s, 0ms);
  release.set_value();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(f.get());
  holder.join();
  EXPECT_EQ(lock.token(), 2) << "taken by the worker, recorded for the calling thread";
  EXPECT_EQ(FencingTokens(client(), key()).current(), 2);
  lock.unlock();
}

// --- lease at risk, the Client's one renewal timer -----------------------------

using RiskKind = PubSubLock::LeaseRisk::Kind;

// What on_lease_risk was told, in order (it runs on the Client's renewal
// timer thread, so the test reads it under a mutex).
class RiskLog {
 public:
  // Watchdog-mode options (lease 0) renewed every watchdog_lease / 3,
  // reporting to this log.
  PubSubLock::Options watchdog(std::chrono::milliseconds watchdog_lease) {
    PubSubLock::Options o;
    o.watchdog_lease = watchdog_lease;
    o.on_lease_risk = [this](const PubSubLock::LeaseRisk& risk) {
      std::lock_guard g(mu_);
      seen_.push_back(risk);
    };
    return o;
  }
  std::vector<PubSubLock::LeaseRisk> seen() const {
    std::lock_guard g(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PubSubLock::LeaseRisk> seen_;
};

TEST_F(PubSubLockTest, ARenewalThatFindsTheKeyGoneTellsTheHolderBeforeUnlock) {
  RiskLog log;
  PubSubLock lock(client(), key(), log.watchdog(300ms));
  lock.lock();
  EXPECT_FALSE(lock.lease_at_risk());
  client().command({"DEL", key()});  // e.g. an operator, or a failover that lost it
  ASSERT_TRUE(eventually([&] { return lock.lease_at_risk(); }, 5s))
      << "the renewal found the key gone and the holder was not told";
  const auto risk = lock.lease_risk();
  EXPECT_EQ(risk->kind, RiskKind::kLost);
  EXPECT_FALSE(risk->taken_by_other);
  EXPECT_EQ(risk->lock_name, key());
  EXPECT_EQ(risk->owner, client().thread_owner());
  EXPECT_FALSE(std::async(std::launch::async, [&] { return lock.lease_at_risk(); }).get())
      << "another thread, which holds nothing, was told of this thread's hold";
  ASSERT_TRUE(eventually([&] { return !log.seen().empty(); }, 5s)) << "on_lease_risk was not called";
  std::this_thread::sleep_for(250ms);  // > 2 periods: no second report, no renewal after the loss
  ASSERT_EQ(log.seen().size(), 1u);
  EXPECT_EQ(log.seen()[0].kind, RiskKind::kLost);
  EXPECT_EQ(lock.failed_renewals(), 1u) << "renewing went on after the loss";
  EXPECT_THROW(lock.unlock(), LockLost);
  EXPECT_FALSE(lock.lease_at_risk()) << "the verdict outlived the hold";
}

TEST_F(PubSubLockTest, ARenewalThatFindsAnotherOwnerSaysTheLockWasTakenByOther) {
  RiskLog log;
  PubSubLock lock(client(), key(), log.watchdog(300ms));
  lock.lock();
  client().command({"DEL", key()});
  client().command({"HSET", key(), "another-owner", "1"});
  ASSERT_TRUE(eventually([&] { return lock.lease_at_risk(); }, 5s)) << "the holder was not told";
  EXPECT_EQ(lock.lease_risk()->kind, RiskKind::kLost);
  EXPECT_TRUE(lock.lease_risk()->taken_by_other);
  ASSERT_TRUE(eventually([&] { return !log.seen().empty(); }, 5s)) << "on_lease_risk was not called";
  EXPECT_TRUE(log.seen()[0].taken_by_other);
  try {
    lock.unlock();
    ADD_FAILURE() << "unlock() of a lost lease returned";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());
  }
  EXPECT_EQ(client().command({"HGET", key(), "another-owner"}).as_string(), "1")
      << "the other owner's hold was touched";
}

// Redis unreachable: the lease may still run (kRenewalFailed, the hold
// kept); the server back without its data: the next renewal finds the key
// gone (kLost). Each reported once, in that order.
TEST_F(PubSubLockTest, ARenewalOnAKilledServerIsAtRiskThenLostOnceItIsBackWithoutTheKey) {
  RiskLog log;
  PubSubLock lock(client(), key(), log.watchdog(600ms));
  lock.lock();
  server().kill();
  ASSERT_TRUE(eventually([&] { return lock.lease_at_risk(); }, 5s)) << "the failing renewal was silent";
  const auto risk = lock.lease_risk();
  EXPECT_EQ(risk->kind, RiskKind::kRenewalFailed);
  EXPECT_FALSE(risk->detail.empty()) << "no error message";
  EXPECT_EQ(lock.hold_count(), 1) << "the hold was dropped although its lease may still run";
  std::this_thread::sleep_for(450ms);  // > 2 more failed renewals: reported once
  EXPECT_EQ(log.seen().size(), 1u);
  server().restart();  // no persistence: the hash is gone
  ASSERT_TRUE(eventually([&] { return lock.lease_risk() && lock.lease_risk()->kind == RiskKind::kLost; }, 5s))
      << "the renewal after the restart did not report the loss";
  ASSERT_TRUE(eventually([&] { return log.seen().size() == 2; }, 5s));
  EXPECT_EQ(log.seen()[0].kind, RiskKind::kRenewalFailed);
  EXPECT_EQ(log.seen()[1].kind, RiskKind::kLost);
  EXPECT_THROW(lock.unlock(), LockLost);
}

// A slow server: the renewal gives up on its reply (kRenewalFailed) while
// the lease still runs; the next renewal succeeds and the hold ends
// normally. The verdict stays (sticky) until that unlock.
TEST_F(PubSubLockTest, ARenewalThatTimesOutIsAtRiskAndTheHoldSurvivesIt) {
  Client impatient(impatient_options());  // gives up on a reply after 200 ms
  RiskLog log;
  PubSubLock lock(impatient, key(), log.watchdog(3s));  // renewed 1 s and 2 s after the lock()
  lock.lock();
  {
    // Busy from now for 1.5 s: the renewal due 1 s after lock() gets no
    // reply within 200 ms; the one at 2 s finds the server free again.
    BusyServer busy(options(), 1500ms);
    ASSERT_TRUE(busy.confirmed()) << "the server never looked busy: the slow renewal was not reproduced";
    ASSERT_TRUE(eventually([&] { return lock.lease_at_risk(); }, 5s)) << "the timed-out renewal was silent";
  }
  ASSERT_TRUE(eventually([&] { return lock.watchdog_renewals() >= 1; }, 5s)) << "no renewal after the server woke";
  const auto risk = lock.lease_risk();
  ASSERT_TRUE(risk.has_value()) << "a successful renewal cleared the verdict";
  EXPECT_EQ(risk->kind, RiskKind::kRenewalFailed);
  EXPECT_NE(risk->detail.find("timed out"), std::string::npos) << risk->detail;
  ASSERT_EQ(log.seen().size(), 1u);
  EXPECT_EQ(log.seen()[0].kind, RiskKind::kRenewalFailed);
  EXPECT_NO_THROW(lock.unlock()) << "the lease did not survive the slow renewal";
  EXPECT_FALSE(lock.lease_at_risk());
}

// 1,000 locks held at once in watchdog mode: one timer thread for all of
// them (a thread per lock object was 1,000 threads), and every lease is
// still renewed past two leases.
TEST_F(PubSubLockTest, AThousandWatchdogHoldsShareTheClientsOneRenewalThread) {
  constexpr int kLocks = 1000;
  PubSubLock::Options o;
  o.watchdog_lease = 1s;
  std::vector<std::unique_ptr<PubSubLock>> locks;
  for (int i = 0; i < kLocks; ++i) locks.push_back(std::make_unique<PubSubLock>(client(), key(std::to_string(i)), o));
  const std::size_t threads_before = threads_in_this_process();
  for (auto& lock : locks) lock->lock();
  const std::size_t threads_holding = threads_in_this_process();
  EXPECT_LE(threads_holding, threads_before + 1) << "more than the one renewal timer thread for " << kLocks << " holds";
  std::this_thread::sleep_for(2500ms);  // 2.5 leases
  std::vector<std::vector<std::string>> pttls;
  for (const auto& lock : locks) pttls.push_back({"PTTL", lock->name()});
  const std::vector<Reply> left = client().pipeline(pttls);
  int expired = 0;
  int unrenewed = 0;
  for (int i = 0; i < kLocks; ++i) {
    if (left[i].as_integer() <= 0) ++expired;
    if (locks[i]->watchdog_renewals() < 2) ++unrenewed;
  }
  EXPECT_EQ(expired, 0) << "leases that ran out although held";
  EXPECT_EQ(unrenewed, 0) << "holds renewed fewer than twice in 2.5 leases";
  for (auto& lock : locks) {
    EXPECT_FALSE(lock->lease_at_risk()) << lock->name();
    lock->unlock();
  }
}

// ~PubSubLock waits for its renewal in progress, on_lease_risk included, so
// the job never touches a destroyed lock.
TEST_F(PubSubLockTest, DestroyingALockWaitsForItsOnLeaseRiskCallInProgress) {
  std::promise<void> entered;
  std::atomic<bool> finished{false};
  PubSubLock::Options o;
  o.watchdog_lease = 300ms;
  o.on_lease_risk = [&](const PubSubLock::LeaseRisk&) {  // called once: kLost
    entered.set_value();
    std::this_thread::sleep_for(200ms);  // slower than the contract allows, to be caught in the act
    finished = true;
  };
  auto lock = std::make_unique<PubSubLock>(client(), key(), o);
  lock->lock();
  client().command({"DEL", key()});
  ASSERT_EQ(entered.get_future().wait_for(5s), std::future_status::ready) << "on_lease_risk was never called";
  lock.reset();
  EXPECT_TRUE(finished.load()) << "~PubSubLock returned while its on_lease_risk call still ran";
}

// Held locks destroyed while their renewals are due (every 1 ms): no crash,
// no deadlock, no renewal left behind (ASan: no use after free).
TEST_F(PubSubLockTest, DestroyingHeldLocksWhileTheirRenewalsAreDueLeavesNoJobBehind) {
  PubSubLock::Options o;
  o.watchdog_lease = 3ms;  // a renewal every 1 ms
  std::uint64_t renewals = 0;
  for (int i = 0; i < 200; ++i) {
    PubSubLock lock(client(), key(std::to_string(i)), o);
    lock.lock();
    std::this_thread::sleep_for(std::chrono::microseconds(500 + 10 * i));  // lands anywhere in the period
    renewals += lock.watchdog_renewals() + lock.failed_renewals();
  }  // destroyed while held
  EXPECT_GT(renewals, 0u) << "no renewal ran: the destructions raced nothing";
  ASSERT_NE(client().lease_renewer_if_started(), nullptr);
  EXPECT_EQ(client().lease_renewer_if_started()->scheduled(), 0u) << "a destroyed lock's renewal is still scheduled";
}

// The child of fork() has no timer thread of the parent: it renews its own
// holds on a timer of its own and may destroy a lock whose renewals ran on
// the parent's; the parent's renewals go on meanwhile.
TEST_F(PubSubLockTest, AForkedChildRenewsOnItsOwnTimerAndMayDestroyAnInheritedWatchdogLock) {
  LOCKLAB_SKIP_FORK_THAT_STARTS_THREADS_UNDER_TSAN();
  PubSubLock::Options o;
  o.watchdog_lease = 300ms;
  PubSubLock::Options parents = o;
  parents.watchdog_lease = 600ms;  // a renewal every 200 ms
  auto inherited = std::make_unique<PubSubLock>(client(), key(), parents);
  inherited->lock();
  ASSERT_TRUE(eventually([&] { return inherited->watchdog_renewals() >= 1; }, 5s));
  // Fork between two renewals, not as one ends: no other thread may be
  // inside a call on the Client at the fork (client.hpp, "After fork()"),
  // and the count goes up while the timer thread is still finishing its
  // renewal (its temporaries freed, its next run scheduled). Forking right
  // there hung the child once under AddressSanitizer.
  std::this_thread::sleep_for(70ms);
  const int status = run_in_forked_child(
      [&] {
        PubSubLock mine(client(), key("child"), o);
        mine.lock();
        std::this_thread::sleep_for(800ms);  // > 2 leases
        EXPECT_GT(client().command({"PTTL", key("child")}).as_integer(), 0) << "the child's hold was not renewed";
        mine.unlock();
        inherited.reset();  // its renewals ran on the parent's timer thread, absent here
      },
      20s);
  EXPECT_EQ(status, 0) << "the forked child failed or hung (-1: killed after 20 s); its output is above";
  ASSERT_TRUE(inherited);
  EXPECT_GT(client().command({"PTTL", key()}).as_integer(), 0) << "the parent's hold was not renewed meanwhile";
  EXPECT_EQ(inherited->hold_count(), 1);
  inherited->unlock();
}

}  // namespace
}  // namespace locklab::redis::testing
