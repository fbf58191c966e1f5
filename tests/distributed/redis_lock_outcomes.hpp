// redis_lock_outcomes.hpp — the outcomes every non-reentrant Redis lock
// (SpinLock, AdaptiveLock, FairLock) must define the same way, as one typed
// GoogleTest suite, so each lock is held to the same contract instead of to
// three copies of it (the local locks do the same in
// tests/primitives/lock_conformance.hpp):
//   - unlock() after the lease expired throws LockLost: taken_by_other()
//     says whether someone else holds it now, whose key is left untouched;
//   - unlock() by a thread that does not hold it (per this object's record)
//     throws std::system_error(operation_not_permitted) and sends nothing;
//   - a relock by the holder throws resource_deadlock_would_occur;
//   - a lease beyond the maximum is std::invalid_argument, nothing sent;
//   - a holder with a lease beyond the steady clock's range is waited for,
//     not retried back to back;
//   - a user without pub/sub permission releases normally.
// A lock joins through the registry (benches/redis_locks.json; the
// instantiations in redis_lock_outcomes_test.cpp read its type lists), with
// RedisLockOutcomeTraits<L>::leased (its Options with a given lease).
//
// A second suite, RedisLockFaultOutcomes, holds every Redis lock, reentrant
// or not (PubSubLock too), to what a production fault must not leave behind:
//   - an acquire whose reply was lost (the server ran it, the client gave up
//     with a timeout) leaves no hold: other owners can take the lock at once,
//     not after the lease, and the owner's next lock() + one unlock() free it.
//
// A third, RedisLockExclusion, holds every Redis lock to its first promise:
// threads of one process, and processes each with its own Client, doing a
// non-atomic GET / +1 / SET of a Redis key under the lock lose no update.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/lock_support.hpp"
#include "tests/distributed/redis_cluster_test_support.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {

// Options of L with the given lease and everything else at its default.
template <class L>
struct RedisLockOutcomeTraits {
  static typename L::Options leased(std::chrono::milliseconds lease) {
    typename L::Options o;
    o.lease = lease;
    return o;
  }
};

// A suite's type parameter: a lock type L, run on the test's standalone
// server (RedisTest), or OnCluster<L>, the same lock on a 3-master Redis
// Cluster (RedisClusterTest, which has RedisTest's members). The bodies
// name the lock as TestFixture::Lock.
template <class L>
struct OnCluster {};
template <class P>
struct OutcomeBackend {
  using Lock = P;
  using Fixture = RedisTest;
};
template <class L>
struct OutcomeBackend<OnCluster<L>> {
  using Lock = L;
  using Fixture = RedisClusterTest;
};

template <class P>
class RedisLockOutcomes : public OutcomeBackend<P>::Fixture {
 public:
  using Lock = typename OutcomeBackend<P>::Lock;
};

TYPED_TEST_SUITE_P(RedisLockOutcomes);

TYPED_TEST_P(RedisLockOutcomes, UnlockAfterTheLeaseExpiredIsLockLostAndLeavesTheNewOwnersKey) {
  using Lock = typename TestFixture::Lock;
  Lock lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(50ms));
  lock.lock();
  std::this_thread::sleep_for(120ms);  // the lease runs out under us
  std::string other;                   // someone else takes it meanwhile
  std::thread([&] {
    ASSERT_TRUE(lock.try_lock());
    other = this->client().thread_owner();
  }).join();
  try {
    lock.unlock();
    FAIL() << "unlock after expiry returned normally";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());
    EXPECT_EQ(e.lock_name(), this->key());
  }
  EXPECT_EQ(this->client().command({"GET", this->key()}).as_string(), other) << "the new owner's key was changed";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  // Expired and nobody took it: LockLost too, taken_by_other() false.
  this->client().command({"DEL", this->key()});
  lock.lock();
  this->client().command({"DEL", this->key()});
  try {
    lock.unlock();
    FAIL() << "unlock of a vanished key returned normally";
  } catch (const LockLost& e) {
    EXPECT_FALSE(e.taken_by_other());
  }
}

TYPED_TEST_P(RedisLockOutcomes, UnlockByANonHolderIsOperationNotPermittedAndSendsNothing) {
  using Lock = typename TestFixture::Lock;
  Lock lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(10s));
  expect_not_permitted([&] { lock.unlock(); }, "unlock of a free lock returned normally");
  lock.lock();
  std::thread([&] {
    const auto before = this->client().round_trips();
    expect_not_permitted([&] { lock.unlock(); }, "another thread unlocked it");
    EXPECT_EQ(this->client().round_trips(), before) << "a refused unlock sent a command";
  }).join();
  EXPECT_EQ(this->client().command({"GET", this->key()}).as_string(), this->client().thread_owner());
  lock.unlock();
}

TYPED_TEST_P(RedisLockOutcomes, RelockingByTheHolderIsResourceDeadlockWouldOccur) {
  using Lock = typename TestFixture::Lock;
  Lock lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(10s));
  lock.lock();
  try {
    (void)lock.try_lock_for(10ms);
    FAIL() << "a relock by the holder returned";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
  }
  lock.unlock();
}

// A lease Redis would refuse (PX past its clock's range) or that the
// lock's own clock arithmetic cannot hold is a caller mistake, found before
// anything is sent: std::invalid_argument, no key written.
TYPED_TEST_P(RedisLockOutcomes, ALeaseBeyondTheMaximumIsInvalidArgumentAndSendsNothing) {
  using Lock = typename TestFixture::Lock;
  const auto before = this->client().round_trips();
  for (const std::chrono::milliseconds lease : {std::chrono::milliseconds(std::chrono::years(1000)),
                                                std::chrono::milliseconds::max()}) {
    EXPECT_THROW(Lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(lease)),
                 std::invalid_argument)
        << lease.count() << " ms";
  }
  EXPECT_EQ(this->client().round_trips(), before);
  EXPECT_EQ(this->client().command({"EXISTS", this->key()}).as_integer(), 0);
  // The maximum itself is a lease like any other.
  Lock longest(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(detail::kMaxDuration));
  longest.lock();
  EXPECT_GT(this->client().command({"PTTL", this->key()}).as_integer(), 0);
  longest.unlock();
}

// A holder whose lease outlasts the steady clock's range (set by another
// client: 10^13 ms, about 317 years, which Redis accepts) is waited for like
// any other: the waiter's wake-up time saturates instead of overflowing into
// the past, which made it attempt back to back until its deadline.
TYPED_TEST_P(RedisLockOutcomes, AWaiterForAHolderWithAHugeLeaseSleepsInsteadOfRetryingBackToBack) {
  using Lock = typename TestFixture::Lock;
  this->client().command({"SET", this->key(), "another-owner", "PX", "10000000000000"});
  Lock lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(10s));
  std::atomic<std::uint64_t> at_half{0};
  std::thread sampler([&] {
    std::this_thread::sleep_for(300ms);  // past any spin phase, parked (or polling) by now
    at_half = lock.attempts();
  });
  EXPECT_FALSE(lock.try_lock_for(600ms));
  sampler.join();
  // Parked waiters make no attempt in the second half; SpinLock polls every
  // 50 ms (about 6). Back-to-back attempts made hundreds.
  EXPECT_LT(lock.attempts() - at_half.load(), 20u);
  EXPECT_EQ(this->client().command({"GET", this->key()}).as_string(), "another-owner");
}

// A user allowed the lock's keys but no pub/sub channel (Redis 7's default
// for a new ACL user): a release script whose wake-up PUBLISH is refused has
// already deleted the key, so unlock() reports the lock released.
TYPED_TEST_P(RedisLockOutcomes, UnlockByAUserWithoutChannelPermissionReleasesTheLock) {
  using Lock = typename TestFixture::Lock;
  UserWithoutChannels user(this->admins(), this->options(), "nochannels");
  Client as_user(user.options());
  Lock lock(as_user, this->key(), RedisLockOutcomeTraits<Lock>::leased(10s));
  lock.lock();
  EXPECT_NO_THROW(lock.unlock());
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_EQ(this->client().command({"EXISTS", this->key()}).as_integer(), 0) << "the lock was not released";
  EXPECT_TRUE(lock.try_lock()) << "the lock cannot be taken again";
  lock.unlock();
}

REGISTER_TYPED_TEST_SUITE_P(RedisLockOutcomes, UnlockAfterTheLeaseExpiredIsLockLostAndLeavesTheNewOwnersKey,
                            UnlockByANonHolderIsOperationNotPermittedAndSendsNothing,
                            RelockingByTheHolderIsResourceDeadlockWouldOccur,
                            ALeaseBeyondTheMaximumIsInvalidArgumentAndSendsNothing,
                            AWaiterForAHolderWithAHugeLeaseSleepsInsteadOfRetryingBackToBack,
                            UnlockByAUserWithoutChannelPermissionReleasesTheLock);

template <class P>
class RedisLockFaultOutcomes : public OutcomeBackend<P>::Fixture {
 public:
  using Lock = typename OutcomeBackend<P>::Lock;
};

TYPED_TEST_SUITE_P(RedisLockFaultOutcomes);

// The server runs the acquire, the reply never reaches the client: a
// client with a short read timeout sends it while the server is busy (DEBUG
// SLEEP from another connection), gives up, and the server runs it later.
TYPED_TEST_P(RedisLockFaultOutcomes, AnAcquireWhoseReplyWasLostLeavesNoHoldBehind) {
  using Lock = typename TestFixture::Lock;
  auto o = RedisLockOutcomeTraits<Lock>::leased(10s);
  o.fenced = true;  // the token counter shows whether the server ran the lost acquire
  Client client(this->impatient_options());
  Lock lock(client, this->key(), o);
  lock.lock();
  lock.unlock();  // loads the scripts: the command lost below is the acquire itself
  ASSERT_TRUE(this->lose_the_reply([&] { lock.lock(); }));
  FencingTokens counter(this->client(), this->key());
  ASSERT_TRUE(eventually([&] { return counter.current() == 2; }, 5s))
      << "the server did not run the lost acquire (token counter " << counter.current() << ")";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  // Another owner takes it at once, not after the 10 s lease.
  std::thread([&] {
    EXPECT_TRUE(lock.try_lock()) << "the lost acquire left a hold behind";
    if (lock.is_held_by_current_thread()) lock.unlock();
  }).join();
  // The owner's next lock() and one unlock() leave it free.
  ASSERT_TRUE(lock.try_lock_for(2s)) << "the lost acquire's hold blocks its own owner";
  lock.unlock();
  std::thread([&] {
    EXPECT_TRUE(lock.try_lock()) << "one lock() + unlock() after the lost acquire left a hold behind";
    if (lock.is_held_by_current_thread()) lock.unlock();
  }).join();
}

REGISTER_TYPED_TEST_SUITE_P(RedisLockFaultOutcomes, AnAcquireWhoseReplyWasLostLeavesNoHoldBehind);

template <class P>
class RedisLockExclusion : public OutcomeBackend<P>::Fixture {
 public:
  using Lock = typename OutcomeBackend<P>::Lock;
};

TYPED_TEST_SUITE_P(RedisLockExclusion);

TYPED_TEST_P(RedisLockExclusion, ExcludesThreadsDoingANonAtomicReadModifyWriteOfARedisKey) {
  using Lock = typename TestFixture::Lock;
  Lock lock(this->client(), this->key(), RedisLockOutcomeTraits<Lock>::leased(10s));
  EXPECT_EQ(increment_under(lock, this->client(), this->key("counter"), 8, 25), 200u);
  EXPECT_EQ(this->client().command({"GET", this->key("counter")}).as_string(), "200");
}

// The child half of the cross-process test: run only via spawn_self, on
// the parent's server and lock (child_env / child_task).
TYPED_TEST_P(RedisLockExclusion, DISABLED_IncrementWorker) {
  using Lock = typename TestFixture::Lock;
  const auto task = child_task();
  ASSERT_TRUE(task);
  Client c(task->options);
  Lock lock(c, task->lock, RedisLockOutcomeTraits<Lock>::leased(10s));
  EXPECT_EQ(increment_under(lock, c, task->lock + ":counter", 1, 50), 50u);
}

TYPED_TEST_P(RedisLockExclusion, ExcludesProcessesDoingANonAtomicReadModifyWrite) {
  const std::string worker =
      std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
      ".DISABLED_IncrementWorker";
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    children.push_back(spawn_self(worker, this->worker_env(this->key())));
    ASSERT_GT(children.back(), 0);
  }
  for (pid_t c : children) EXPECT_EQ(wait_child(c), 0);
  EXPECT_EQ(this->client().command({"GET", this->key() + ":counter"}).as_string(), "150");
}

REGISTER_TYPED_TEST_SUITE_P(RedisLockExclusion, ExcludesThreadsDoingANonAtomicReadModifyWriteOfARedisKey,
                            DISABLED_IncrementWorker, ExcludesProcessesDoingANonAtomicReadModifyWrite);

}  // namespace locklab::redis::testing
