// The shared outcome contract (redis_lock_outcomes.hpp) for every Redis lock
// of the registry (benches/redis_locks.json): the fault outcomes and mutual
// exclusion for all of them, the relock and unlock outcomes for the
// non-reentrant ones. A reentrant lock's relock and unlock outcomes differ
// and stay in its own test file (PubSubLock's in pub_sub_lock_test.cpp). A
// lock added to the registry joins every suite here with no edit. The same
// suites run on a local Redis Cluster in redis_cluster_lock_outcomes_test.cpp.
#include "tests/distributed/redis_lock_outcomes.hpp"

#include "benches/harness/redis_lock_registry.hpp"
#include "distributed/read_write_lock.hpp"

namespace locklab::redis::testing {
namespace {

template <class List>
struct GtestTypesOf;
template <class... L>
struct GtestTypesOf<bench::RedisLockTypeList<L...>> {
  using type = ::testing::Types<L...>;
};

using NonReentrantRedisLocks = GtestTypesOf<bench::NonReentrantRedisLockTypes>::type;
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockOutcomes, NonReentrantRedisLocks);

using AllRedisLocks = GtestTypesOf<bench::RedisLockTypes>::type;
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockFaultOutcomes, AllRedisLocks);
INSTANTIATE_TYPED_TEST_SUITE_P(Redis, RedisLockExclusion, AllRedisLocks);

// The two sides of ReadWriteLock (read_write_lock.hpp), reentrant, held to
// the fault outcomes; the write side to exclusion too (readers share, so
// the read side cannot be). Not in the registry's JSON: the benches and
// scenarios that iterate it measure exclusive locks, and the read side is
// none; its read-fraction curve is the redis_rwlock suite.
using ReadWriteLockSides = ::testing::Types<ReadLock, WriteLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(RedisReadWrite, RedisLockFaultOutcomes, ReadWriteLockSides);
using ReadWriteLockWriteSide = ::testing::Types<WriteLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(RedisReadWrite, RedisLockExclusion, ReadWriteLockWriteSide);

}  // namespace
}  // namespace locklab::redis::testing
