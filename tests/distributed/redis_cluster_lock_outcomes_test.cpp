// The shared outcome contract (redis_lock_outcomes.hpp) on a local 3-master
// Redis Cluster: every suite of redis_lock_outcomes_test.cpp, same bodies,
// with each lock type wrapped in OnCluster<L> (fixture RedisClusterTest).
// The lock names are the suites' own (locklab:test:<suite>:<test>:lock, no
// hash tag), so their keys spread over the masters, and every multi-key
// script (a fenced acquire, FairLock's queue) names keys that lock_keys.hpp
// must keep in the name's slot, or the server would answer CROSSSLOT.
//
// Registered as one ctest entry (tests/CMakeLists.txt): one process, so the
// cluster's start (each master waits 2 s after it starts before it accepts
// writes) is paid once, not once per test case.
#include "tests/distributed/redis_lock_outcomes.hpp"

#include "benches/harness/redis_lock_registry.hpp"

namespace locklab::redis::testing {
namespace {

template <class List>
struct OnClusterTypesOf;
template <class... L>
struct OnClusterTypesOf<bench::RedisLockTypeList<L...>> {
  using type = ::testing::Types<OnCluster<L>...>;
};

using NonReentrantRedisLocksOnCluster = OnClusterTypesOf<bench::NonReentrantRedisLockTypes>::type;
INSTANTIATE_TYPED_TEST_SUITE_P(RedisCluster, RedisLockOutcomes, NonReentrantRedisLocksOnCluster);

using AllRedisLocksOnCluster = OnClusterTypesOf<bench::RedisLockTypes>::type;
INSTANTIATE_TYPED_TEST_SUITE_P(RedisCluster, RedisLockFaultOutcomes, AllRedisLocksOnCluster);
INSTANTIATE_TYPED_TEST_SUITE_P(RedisCluster, RedisLockExclusion, AllRedisLocksOnCluster);

}  // namespace
}  // namespace locklab::redis::testing
