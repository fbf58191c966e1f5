// Every Redis lock type through the standard adaptors (std::lock_guard,
// std::scoped_lock, std::unique_lock): the Lockable and TimedLockable
// requirements, and the deadline rules that DeadlineLockable
// (distributed/deadline_lockable.hpp) states once for all of them — a zero
// or negative timeout, or a deadline already past on any clock, is exactly
// one attempt.
#include <gtest/gtest.h>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <mutex>
#include <string>

#include "distributed/adaptive_lock.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/fair_lock.hpp"
#include "distributed/fencing.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/red_lock.hpp"
#include "distributed/spin_lock.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

// The standard's TimedLockable, spelled out: what std::unique_lock's timed
// constructors and try_lock_for / try_lock_until call.
template <class L>
concept TimedLockable = requires(L& l, std::chrono::milliseconds d, std::chrono::steady_clock::time_point s,
                                 std::chrono::system_clock::time_point t) {
  l.lock();
  { l.try_lock() } -> std::same_as<bool>;
  l.unlock();
  { l.try_lock_for(d) } -> std::same_as<bool>;
  { l.try_lock_until(s) } -> std::same_as<bool>;
  { l.try_lock_until(t) } -> std::same_as<bool>;
};

// Each lock type with a 10 s lease (no watchdog), built on the test's Client
// and key. RedLock runs on that one server as its only node (quorum 1).
template <class L>
struct Make {
  static L make(Client& client, const std::string& key) {
    typename L::Options o;
    o.lease = std::chrono::seconds(10);
    return L(client, key, o);
  }
};
template <>
struct Make<RedLock> {
  static RedLock make(Client& client, const std::string& key) {
    RedLock::Options o;
    o.lease = std::chrono::seconds(10);
    o.retry_delay = std::chrono::milliseconds(5);
    return RedLock({&client}, key, o);
  }
};

template <class L>
class DeadlineLockableTest : public RedisTest {};

using RedisLocks = ::testing::Types<SpinLock, AdaptiveLock, FairLock, PubSubLock, RedLock, FencedSpinLock>;
TYPED_TEST_SUITE(DeadlineLockableTest, RedisLocks);

TYPED_TEST(DeadlineLockableTest, IsLockableAndTimedLockableForTheStandardAdaptors) {
  static_assert(TimedLockable<TypeParam>);
  static_assert(std::derived_from<TypeParam, DeadlineLockable<TypeParam>>);
  auto lock = Make<TypeParam>::make(this->client(), this->key());
  auto other = Make<TypeParam>::make(this->client(), this->key("other"));
  {
    std::lock_guard g(lock);
    EXPECT_TRUE(lock.is_held_by_current_thread());
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
  {
    std::scoped_lock both(lock, other);  // std::lock: lock() and try_lock()
    EXPECT_TRUE(lock.is_held_by_current_thread());
    EXPECT_TRUE(other.is_held_by_current_thread());
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_FALSE(other.is_held_by_current_thread());
  {
    std::unique_lock g(lock, std::try_to_lock);
    EXPECT_TRUE(g.owns_lock());
  }
  {
    std::unique_lock g(lock, std::chrono::milliseconds(500));  // try_lock_for
    EXPECT_TRUE(g.owns_lock());
  }
  {
    std::unique_lock g(lock, std::chrono::system_clock::now() + std::chrono::seconds(1));  // try_lock_until
    EXPECT_TRUE(g.owns_lock());
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

// Held by another thread: each of these is one attempt that fails, never a
// wait (the attempts() counter of every lock counts its acquire commands).
TYPED_TEST(DeadlineLockableTest, ZeroNegativeAndPastDeadlinesMakeExactlyOneAttempt) {
  auto lock = Make<TypeParam>::make(this->client(), this->key());
  Holder<TypeParam> holder(lock);
  std::unique_lock g(lock, std::defer_lock);
  const auto one_attempt = [&](const char* what, auto&& call) {
    const std::uint64_t before = lock.attempts();
    EXPECT_FALSE(call()) << what;
    EXPECT_EQ(lock.attempts(), before + 1) << what;
    EXPECT_FALSE(g.owns_lock()) << what;
  };
  one_attempt("try_lock()", [&] { return g.try_lock(); });
  one_attempt("try_lock_for(0 ms)", [&] { return g.try_lock_for(std::chrono::milliseconds(0)); });
  one_attempt("try_lock_for(-5 ms)", [&] { return g.try_lock_for(std::chrono::milliseconds(-5)); });
  one_attempt("try_lock_for(-1 h)", [&] { return g.try_lock_for(std::chrono::hours(-1)); });
  one_attempt("try_lock_for(0.0 s)", [&] { return g.try_lock_for(std::chrono::duration<double>(0.0)); });
  one_attempt("try_lock_until(steady now - 1 ms)",
              [&] { return g.try_lock_until(std::chrono::steady_clock::now() - std::chrono::milliseconds(1)); });
  one_attempt("try_lock_until(system now - 1 h)",
              [&] { return g.try_lock_until(std::chrono::system_clock::now() - std::chrono::hours(1)); });
  one_attempt("try_lock_until(system epoch)",
              [&] { return g.try_lock_until(std::chrono::system_clock::time_point{}); });
  holder.release();
}

}  // namespace
}  // namespace locklab::redis::testing
