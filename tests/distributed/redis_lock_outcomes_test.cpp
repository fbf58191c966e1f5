// The shared outcome contract (redis_lock_outcomes.hpp) for every
// non-reentrant Redis lock. PubSubLock is reentrant: its relock and unlock
// outcomes differ and stay in pub_sub_lock_test.cpp. The fault outcomes
// and the exclusion tests hold for every lock, PubSubLock included.
#include "tests/distributed/redis_lock_outcomes.hpp"

#include "distributed/adaptive_lock.hpp"
#include "distributed/fair_lock.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::redis::testing {
namespace {

using NonReentrantRedisLocks = ::testing::Types<SpinLock, AdaptiveLock, FairLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockOutcomes, NonReentrantRedisLocks);

using AllRedisLocks = ::testing::Types<SpinLock, AdaptiveLock, FairLock, PubSubLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockFaultOutcomes, AllRedisLocks);
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockExclusion, AllRedisLocks);

}  // namespace
}  // namespace locklab::redis::testing
