// CountDownLatch's outcomes (count_down_latch.hpp).
#include "distributed/count_down_latch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using RedisCountDownLatchTest = RedisTest;

TEST_F(RedisCountDownLatchTest, TheLastCountDownOpensEveryWaiterExactlyOnce) {
  CountDownLatch latch(client(), key());
  CountDownLatch other(client(), key());  // a second object on the same name: woken by the relay
  ASSERT_TRUE(latch.try_set_count(3));
  std::atomic<int> passed{0};
  std::atomic<int> timed_out{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 6; ++i) {
    waiters.emplace_back([&, i] {
      // 20 s: far beyond the 5 s bound below, so only a message, a poke or
      // a relay can open every waiter within it.
      if ((i % 3 == 0 ? other : latch).await_for(20s)) {
        ++passed;
      } else {
        ++timed_out;
      }
    });
  }
  // Parked (or about to): subscribed on the channel.
  ASSERT_TRUE(eventually(
      [&] { return client().command({"PUBSUB", "NUMSUB", latch.channel()}).as_array().at(1).as_integer() == 1; }, 5s));
  EXPECT_EQ(latch.count_down(), 2);
  EXPECT_EQ(other.count_down(), 1);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(passed.load(), 0) << "a waiter passed a closed latch";
  EXPECT_EQ(latch.count_down(), 0);
  EXPECT_TRUE(eventually([&] { return passed.load() == 6; }, 5s)) << "not every waiter was woken";
  for (auto& t : waiters) t.join();
  EXPECT_EQ(passed.load(), 6);
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_EQ(latch.get_count(), 0);
  EXPECT_EQ(latch.count_down(), 0) << "a count_down at zero changed something";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(RedisCountDownLatchTest, AnAwaitTimesOutOnAClosedLatchAndChangesNothing) {
  CountDownLatch latch(client(), key());
  ASSERT_TRUE(latch.try_set_count(1));
  EXPECT_FALSE(latch.await_for(100ms));
  EXPECT_FALSE(latch.await_for(0ms));
  EXPECT_EQ(latch.get_count(), 1);
  EXPECT_EQ(latch.count_down(), 0);
  EXPECT_TRUE(latch.await_for(0ms));
}

TEST_F(RedisCountDownLatchTest, TrySetCountSucceedsOnlyOnAnOpenLatch) {
  CountDownLatch latch(client(), key());
  EXPECT_EQ(latch.get_count(), 0);
  EXPECT_TRUE(latch.try_set_count(0)) << "an open latch is at zero";
  EXPECT_TRUE(latch.try_set_count(2));
  EXPECT_FALSE(latch.try_set_count(5)) << "a counting latch was re-armed";
  EXPECT_FALSE(latch.try_set_count(0));
  EXPECT_EQ(latch.get_count(), 2);
  EXPECT_EQ(latch.count_down(), 1);
  EXPECT_EQ(latch.count_down(), 0);
  EXPECT_TRUE(latch.try_set_count(1));
  EXPECT_EQ(latch.get_count(), 1);
}

TEST_F(RedisCountDownLatchTest, ANegativeCountOrTimeoutIsInvalidArgumentAndSendsNothing) {
  CountDownLatch latch(client(), key());
  const auto before = client().round_trips();
  EXPECT_THROW((void)latch.try_set_count(-1), std::invalid_argument);
  EXPECT_THROW((void)latch.await_for(-1ms), std::invalid_argument);
  EXPECT_THROW(CountDownLatch(client(), "a~b"), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before);
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(RedisCountDownLatchTest, AForeignValueIsATypedErrorAndIsLeftAlone) {
  client().command({"SET", key(), "not-a-number"});
  CountDownLatch latch(client(), key());
  expect_error([&] { (void)latch.count_down(); }, Error::Kind::kServer, {"integer"});
  expect_error([&] { (void)latch.get_count(); }, Error::Kind::kProtocol, {"not-a-number"});
  EXPECT_EQ(client().command({"GET", key()}).as_string(), "not-a-number");
}

}  // namespace
}  // namespace locklab::redis::testing
