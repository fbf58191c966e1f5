// redis_lock_outcomes.hpp — the outcomes every non-reentrant Redis lock
// (SpinLock, AdaptiveLock, FairLock) must define the same way, as one typed
// GoogleTest suite, so each lock is held to the same contract instead of to
// three copies of it (the local locks do the same in
// tests/primitives/lock_conformance.hpp):
//   - unlock() after the lease expired throws LockLost: taken_by_other()
//     says whether someone else holds it now, whose key is left untouched;
//   - unlock() by a thread that does not hold it (per this object's record)
//     throws std::system_error(operation_not_permitted) and sends nothing;
//   - a relock by the holder throws resource_deadlock_would_occur.
// A lock joins with RedisLockOutcomeTraits<L>::leased (its Options with a
// given lease) and one INSTANTIATE_TYPED_TEST_SUITE_P line.
//
// A second suite, RedisLockFaultOutcomes, holds every Redis lock, reentrant
// or not (PubSubLock too), to what a production fault must not leave behind:
//   - an acquire whose reply was lost (the server ran it, the client gave up
//     with a timeout) leaves no hold: other owners can take the lock at once,
//     not after the lease, and the owner's next lock() + one unlock() free it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
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

template <class L>
class RedisLockOutcomes : public RedisTest {};

TYPED_TEST_SUITE_P(RedisLockOutcomes);

TYPED_TEST_P(RedisLockOutcomes, UnlockAfterTheLeaseExpiredIsLockLostAndLeavesTheNewOwnersKey) {
  TypeParam lock(this->client(), this->key(), RedisLockOutcomeTraits<TypeParam>::leased(50ms));
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
  TypeParam lock(this->client(), this->key(), RedisLockOutcomeTraits<TypeParam>::leased(10s));
  try {
    lock.unlock();
    FAIL() << "unlock of a free lock returned normally";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::operation_not_permitted);
  }
  lock.lock();
  std::thread([&] {
    const auto before = this->client().round_trips();
    try {
      lock.unlock();
      ADD_FAILURE() << "another thread unlocked it";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::operation_not_permitted);
    }
    EXPECT_EQ(this->client().round_trips(), before) << "a refused unlock sent a command";
  }).join();
  EXPECT_EQ(this->client().command({"GET", this->key()}).as_string(), this->client().thread_owner());
  lock.unlock();
}

TYPED_TEST_P(RedisLockOutcomes, RelockingByTheHolderIsResourceDeadlockWouldOccur) {
  TypeParam lock(this->client(), this->key(), RedisLockOutcomeTraits<TypeParam>::leased(10s));
  lock.lock();
  try {
    (void)lock.try_lock_for(10ms);
    FAIL() << "a relock by the holder returned";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
  }
  lock.unlock();
}

REGISTER_TYPED_TEST_SUITE_P(RedisLockOutcomes, UnlockAfterTheLeaseExpiredIsLockLostAndLeavesTheNewOwnersKey,
                            UnlockByANonHolderIsOperationNotPermittedAndSendsNothing,
                            RelockingByTheHolderIsResourceDeadlockWouldOccur);

template <class L>
class RedisLockFaultOutcomes : public RedisTest {};

TYPED_TEST_SUITE_P(RedisLockFaultOutcomes);

// The server runs the acquire, the reply never reaches the client: a
// client with a short read timeout sends it while the server is busy (DEBUG
// SLEEP from another connection), gives up, and the server runs it later.
TYPED_TEST_P(RedisLockFaultOutcomes, AnAcquireWhoseReplyWasLostLeavesNoHoldBehind) {
  auto o = RedisLockOutcomeTraits<TypeParam>::leased(10s);
  o.fenced = true;  // the token counter shows whether the server ran the lost acquire
  Client client(this->impatient_options());
  TypeParam lock(client, this->key(), o);
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

}  // namespace locklab::redis::testing
