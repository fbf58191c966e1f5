#include "distributed/permit_semaphore.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "distributed/subscriber.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using PermitSemaphoreTest = RedisTest;

TEST_F(PermitSemaphoreTest, SetPermitsOnlyOnceAndCountWhatIsFree) {
  PermitSemaphore sem(client(), key());
  EXPECT_EQ(sem.permits(), std::nullopt);
  EXPECT_EQ(sem.available_permits(), 0) << "not set up: nothing free";
  EXPECT_TRUE(sem.try_set_permits(3));
  EXPECT_FALSE(sem.try_set_permits(5)) << "only if unset";
  EXPECT_EQ(sem.permits(), std::optional<std::int64_t>(3));
  EXPECT_EQ(sem.available_permits(), 3);
  const auto a = sem.try_acquire(0ms, 10s);
  const auto b = sem.try_acquire(0ms, 10s);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(sem.available_permits(), 1);
  EXPECT_EQ(client().command({"ZCARD", sem.timeout_key()}).as_integer(), 2);
  sem.release(*a);
  EXPECT_EQ(sem.available_permits(), 2);
  sem.release(*b);
  EXPECT_EQ(sem.available_permits(), 3);
  EXPECT_EQ(client().command({"EXISTS", sem.timeout_key()}).as_integer(), 0) << "nothing left behind";
}

TEST_F(PermitSemaphoreTest, UncontendedAcquireAndReleaseAreOneRoundTripEach) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  sem.release(*sem.try_acquire(0ms, 10s));  // loads the scripts
  const auto before = client().round_trips();
  const auto id = sem.try_acquire(1s, 10s);
  ASSERT_TRUE(id);
  EXPECT_EQ(client().round_trips() - before, 1u);
  sem.release(*id);
  EXPECT_EQ(client().round_trips() - before, 2u);
  EXPECT_EQ(client().subscriber_if_started(), nullptr) << "no waiter, no pub/sub connection";
}

TEST_F(PermitSemaphoreTest, NeverMoreThanNPermitsHeldByConcurrentThreads) {
  constexpr int kPermits = 3;
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(kPermits));
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 15; ++i) {
        const auto id = sem.try_acquire(20s, 20s);
        if (!id) {
          ADD_FAILURE() << "no permit within 20 s";
          return;
        }
        const int now = inside.fetch_add(1) + 1;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(1ms);
        inside.fetch_sub(1);
        sem.release(*id);
        done.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 8 * 15);
  EXPECT_LE(max_inside.load(), kPermits);
  EXPECT_GE(max_inside.load(), 2) << "the permits were actually shared";
  EXPECT_EQ(sem.available_permits(), kPermits);
}

TEST_F(PermitSemaphoreTest, ExpiredPermitsAreReclaimed) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(2));
  ASSERT_TRUE(sem.try_acquire(0ms, 50ms));
  ASSERT_TRUE(sem.try_acquire(0ms, 50ms));
  EXPECT_FALSE(sem.try_acquire(0ms, 10s)) << "both held";
  std::this_thread::sleep_for(120ms);  // both leases run out; nobody released
  EXPECT_EQ(sem.available_permits(), 2);
  EXPECT_EQ(client().command({"ZCARD", sem.timeout_key()}).as_integer(), 0) << "purged, not just ignored";
}

TEST_F(PermitSemaphoreTest, AWaiterGetsAPermitWhoseHolderNeverReleases) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto start = Clock::now();
  ASSERT_TRUE(sem.try_acquire(0ms, 150ms));  // a "crashed" holder: never released
  const auto id = sem.try_acquire(5s, 10s);
  ASSERT_TRUE(id) << "the waiter slept past the holder's expiry";
  EXPECT_GE(ms_since(start), 140.0) << "it was really held (150 ms lease, server clock)";
  sem.release(*id);
}

TEST_F(PermitSemaphoreTest, ReleasingAnUnknownOrExpiredPermitIsPermitNotHeldAndChangesNothing) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(2));
  const auto held = sem.try_acquire(0ms, 10s);
  ASSERT_TRUE(held);
  try {
    sem.release("no-such-permit");
    FAIL();
  } catch (const PermitNotHeld& e) {
    EXPECT_FALSE(e.expired());
    EXPECT_EQ(e.permit_id(), "no-such-permit");
    EXPECT_EQ(e.semaphore(), key());
  }
  EXPECT_EQ(sem.available_permits(), 1) << "the held permit is untouched";
  // Released twice: the second is unknown.
  sem.release(*held);
  EXPECT_THROW(sem.release(*held), PermitNotHeld);
  EXPECT_EQ(sem.available_permits(), 2) << "no double credit";
  // Expired, released before anyone reclaimed it: expired() says so.
  const auto late = sem.try_acquire(0ms, 30ms);
  ASSERT_TRUE(late);
  std::this_thread::sleep_for(80ms);
  try {
    sem.release(*late);
    FAIL();
  } catch (const PermitNotHeld& e) {
    EXPECT_TRUE(e.expired()) << e.what();
  }
  EXPECT_EQ(sem.available_permits(), 2);
  EXPECT_THROW(sem.release(""), std::invalid_argument);
}

TEST_F(PermitSemaphoreTest, APermitMayBeReleasedByAnotherThread) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto id = sem.try_acquire(0ms, 10s);
  ASSERT_TRUE(id);
  std::thread([&] { sem.release(*id); }).join();
  EXPECT_EQ(sem.available_permits(), 1);
}

// The holder's lease (30 s) is far beyond the waiter's budget (10 s): only
// the release message can wake it in time.
TEST_F(PermitSemaphoreTest, AWaiterIsWokenByTheReleaseNotByItsLease) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto held = sem.try_acquire(0ms, 30s);
  ASSERT_TRUE(held);
  std::optional<std::string> got;
  std::thread waiter([&] { got = sem.try_acquire(10s, 10s); });
  ASSERT_TRUE(eventually([&] { return client().subscriber_if_started() != nullptr &&
                                      client().subscriber_if_started()->channel_count() == 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(got.has_value());
  const auto released = Clock::now();
  sem.release(*held);
  waiter.join();
  ASSERT_TRUE(got);
  EXPECT_LT(ms_since(released), 9'000.0);
  sem.release(*got);
}

TEST_F(PermitSemaphoreTest, WaitersOnAnUnsetSemaphoreWakeWhenItIsSet) {
  PermitSemaphore sem(client(), key());
  std::atomic<int> got{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (sem.try_acquire(30s, 30s)) got.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return client().subscriber_if_started() != nullptr &&
                                      client().subscriber_if_started()->channel_count() == 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(got.load(), 0);
  ASSERT_TRUE(sem.try_set_permits(3));  // one message; each winner passes it on
  // Well before the waiters' 30 s deadline (whose last attempt would succeed
  // anyway): only the wake-up chain gets all three in time.
  EXPECT_TRUE(eventually([&] { return got.load() == 3; }, 15s));
  for (auto& w : waiters) w.join();
  EXPECT_EQ(got.load(), 3);
  EXPECT_EQ(sem.available_permits(), 0);
}

TEST_F(PermitSemaphoreTest, ZeroOrNegativeWaitIsOneAttemptWithoutASubscription) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  ASSERT_TRUE(sem.try_acquire(0ms, 10s));
  for (auto wait : {0ms, -5ms}) {
    const auto before = sem.attempts();
    const auto start = Clock::now();
    EXPECT_FALSE(sem.try_acquire(wait, 10s));
    EXPECT_EQ(sem.attempts() - before, 1u);
    EXPECT_LT(ms_since(start), 5'000.0);
  }
  EXPECT_FALSE(sem.try_acquire_until(Clock::now() - 1s, 10s));
  EXPECT_EQ(client().subscriber_if_started(), nullptr);
}

TEST_F(PermitSemaphoreTest, ATimedWaitFailsNoEarlierThanItsDeadline) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  ASSERT_TRUE(sem.try_acquire(0ms, 10s));
  const auto start = Clock::now();
  EXPECT_FALSE(sem.try_acquire(100ms, 10s));
  EXPECT_GE(ms_since(start), 100.0);
}

TEST_F(PermitSemaphoreTest, PermitIdsAreUniqueAcrossThreadsAndObjects) {
  PermitSemaphore a(client(), key());
  PermitSemaphore b(client(), key());
  ASSERT_TRUE(a.try_set_permits(200));
  std::set<std::string> ids;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const auto id = (t % 2 ? a : b).try_acquire(0ms, 10s);
        ASSERT_TRUE(id);
        std::lock_guard g(mu);
        ids.insert(*id);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(a.available_permits(), 100);
}

TEST_F(PermitSemaphoreTest, BadArgumentsAreInvalidArgumentAndSendNothing) {
  PermitSemaphore sem(client(), key());
  const auto before = client().round_trips();
  EXPECT_THROW(sem.try_set_permits(-1), std::invalid_argument);
  EXPECT_THROW((void)sem.try_acquire(0ms, 0ms), std::invalid_argument);
  EXPECT_THROW((void)sem.try_acquire(0ms, -1s), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before);
  EXPECT_THROW(PermitSemaphore(client(), ""), std::invalid_argument);
  EXPECT_TRUE(sem.try_set_permits(0)) << "zero permits is a legal (closed) semaphore";
  EXPECT_FALSE(sem.try_acquire(0ms, 1s));
}

TEST_F(PermitSemaphoreTest, AWrongTypeKeyIsATypedServerError) {
  client().command({"HSET", key(), "f", "v"});
  PermitSemaphore sem(client(), key());
  try {
    (void)sem.try_acquire(0ms, 1s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer) << e.what();
  }
}

// The count lost after it was set (FLUSHALL here; a restart without
// persistence or an eviction alike): an acquire that knows n re-creates it.
TEST_F(PermitSemaphoreTest, AnAcquireGivenPermitsIfMissingRecreatesALostCount) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  auto held = sem.try_acquire(0ms, 10s);
  ASSERT_TRUE(held);
  client().command({"FLUSHALL"});
  EXPECT_FALSE(sem.try_acquire(0ms, 10s)) << "a plain acquire still waits for try_set_permits";
  EXPECT_FALSE(sem.permits().has_value());
  auto again = sem.try_acquire(0ms, 10s, 1);
  ASSERT_TRUE(again) << "the count was not re-created";
  EXPECT_EQ(sem.permits(), std::optional<std::int64_t>(1));
  EXPECT_FALSE(sem.try_acquire(0ms, 10s, 5)) << "an existing count is never changed";
  EXPECT_EQ(sem.permits(), std::optional<std::int64_t>(1));
  EXPECT_THROW(sem.release(*held), PermitNotHeld) << "the permit held before the loss went with it";
  sem.release(*again);
  EXPECT_THROW((void)sem.try_acquire(0ms, 1s, -1), std::invalid_argument);
}

// The acquire script runs on the server while its reply is lost: the
// permit it took must not sit in the pool, unusable by anyone, for its
// whole lease. Before the error propagates (or before this object's next
// operation) the release script runs for that permit id.
TEST_F(PermitSemaphoreTest, AnAcquireWhoseReplyWasLostLeavesNoPermitHeld) {
  ASSERT_TRUE(PermitSemaphore(client(), key()).try_set_permits(1));
  Client impatient(impatient_options());
  PermitSemaphore sem(impatient, key());
  auto warm = sem.try_acquire(0ms, 10s);  // loads the script: the command lost below is the acquire itself
  ASSERT_TRUE(warm);
  sem.release(*warm);
  ASSERT_TRUE(lose_the_reply([&] { (void)sem.try_acquire(0ms, 10s); }));
  // With its only permit taken unseen for 10 s, the semaphore would refuse
  // every try for 10 s; restored, it grants the next one (at the latest
  // the first after the busy server answers again).
  std::optional<std::string> next;
  ASSERT_TRUE(eventually([&] {
    try {
      next = sem.try_acquire(0ms, 10s);
    } catch (const Error&) {
      return false;  // the restore still waits behind the busy server
    }
    return next.has_value();
  }, 5s)) << "the lost acquire's permit is still held";
  EXPECT_EQ(client().command({"ZCARD", sem.timeout_key()}).as_integer(), 1) << "more than the new permit held";
  sem.release(*next);
  EXPECT_EQ(client().command({"ZCARD", sem.timeout_key()}).as_integer(), 0);
}

// A count key that is not a number (someone else's key under this name):
// a typed error naming the server, not std::invalid_argument from stoll.
TEST_F(PermitSemaphoreTest, ANonNumericCountIsATypedProtocolError) {
  client().command({"SET", key(), "twelve"});
  PermitSemaphore sem(client(), key());
  expect_error([&] { (void)sem.permits(); }, Error::Kind::kProtocol, {options().endpoint(), "twelve"});
}

TEST_F(PermitSemaphoreTest, RedisDownIsATypedErrorNotAHang) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto id = sem.try_acquire(0ms, 10s);
  ASSERT_TRUE(id);
  server().kill();
  const auto start = Clock::now();
  EXPECT_THROW(sem.release(*id), Error);
  EXPECT_THROW((void)sem.try_acquire(1s, 10s), Error);
  EXPECT_THROW((void)sem.available_permits(), Error);
  EXPECT_THROW((void)sem.try_set_permits(1), Error);
  EXPECT_LT(ms_since(start), 10'000.0);
}

// A waiter blocked on the subscription when the server dies gets a typed
// error too (from the re-subscription or the next attempt), not a hang.
TEST_F(PermitSemaphoreTest, AWaiterWhoseServerDiesGetsATypedError) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  ASSERT_TRUE(sem.try_acquire(0ms, 30s));
  std::atomic<bool> threw{false};
  std::thread waiter([&] {
    try {
      (void)sem.try_acquire(20s, 10s);
    } catch (const Error&) {
      threw = true;
    }
  });
  ASSERT_TRUE(eventually([&] { return client().subscriber_if_started() != nullptr &&
                                      client().subscriber_if_started()->channel_count() == 1; }));
  server().kill();
  waiter.join();
  EXPECT_TRUE(threw.load());
}

// A user allowed the keys but no pub/sub channel (Redis 7's default for a
// new ACL user): every script's wake-up PUBLISH is refused. Scripts are not
// rolled back, so that refusal used to turn a count already set, a permit
// already taken or one already freed into an error.
TEST_F(PermitSemaphoreTest, AUserWithoutChannelPermissionSetsAcquiresAndReleasesWithoutErrors) {
  UserWithoutChannels user(client(), options(), "nochannels");
  Client as_user(user.options());
  PermitSemaphore sem(as_user, key());
  EXPECT_TRUE(sem.try_set_permits(2));
  const auto id = sem.try_acquire(0ms, 10s);  // leaves one free: publishes
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(sem.available_permits(), 1);
  EXPECT_NO_THROW(sem.release(*id));
  EXPECT_EQ(sem.available_permits(), 2);
}

TEST_F(PermitSemaphoreTest, ALeaseBeyondTheMaximumIsInvalidArgumentAndSendsNothing) {
  PermitSemaphore sem(client(), key());
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto before = client().round_trips();
  EXPECT_THROW((void)sem.try_acquire(0ms, std::chrono::years(1000)), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before);
  EXPECT_EQ(sem.available_permits(), 1);
}

}  // namespace
}  // namespace locklab::redis::testing
