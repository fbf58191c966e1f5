#include "primitives/reentrant_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/primitives/lock_conformance.hpp"
#include "tests/eventually.hpp"

namespace locklab {

// The conformance suite default-constructs its lock: one tiny type per mode.
struct FairReentrantLock : ReentrantLock {
  FairReentrantLock() : ReentrantLock(Fairness::kFair) {}
};
struct UnfairReentrantLock : ReentrantLock {
  UnfairReentrantLock() : ReentrantLock(Fairness::kUnfair) {}
};

template <>
struct testing::LockTraits<FairReentrantLock> {
  static constexpr bool fifo = true;  // FIFO hand-off: checked by the suite
};

using ReentrantLockModesForConformance = ::testing::Types<FairReentrantLock, UnfairReentrantLock>;
struct ModeName {
  template <class L>
  static std::string GetName(int) {
    return std::is_same_v<L, FairReentrantLock> ? "Fair" : "Unfair";
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(ReentrantLock, LockConformance, ReentrantLockModesForConformance, ModeName);

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using locklab::testing::eventually;

// Runs f, expecting std::system_error with operation_not_permitted.
template <class F>
::testing::AssertionResult throws_not_permitted(F&& f) {
  try {
    f();
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::operation_not_permitted) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "system_error with the wrong code: " << e.code().message();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something other than std::system_error";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// Runs f on another thread and waits for it.
template <class F>
void on_other_thread(F&& f) {
  std::jthread t(std::forward<F>(f));
}

class ReentrantLockModes : public ::testing::TestWithParam<Fairness> {};
INSTANTIATE_TEST_SUITE_P(Both, ReentrantLockModes, ::testing::Values(Fairness::kUnfair, Fairness::kFair),
                         [](const auto& info) { return info.param == Fairness::kFair ? "Fair" : "Unfair"; });

TEST_P(ReentrantLockModes, ReentrancyDepthAndHoldCounts) {
  ReentrantLock lock(GetParam());
  EXPECT_EQ(lock.is_fair(), GetParam() == Fairness::kFair);
  EXPECT_FALSE(lock.is_locked());
  EXPECT_EQ(lock.hold_count(), 0);
  lock.lock();
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.try_lock_for(0ms));
  EXPECT_TRUE(lock.try_lock_until(Clock::now() - 1s));  // reentrant: no wait needed even with a past deadline
  EXPECT_EQ(lock.hold_count(), 5);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_TRUE(lock.is_locked());
  on_other_thread([&] {
    EXPECT_EQ(lock.hold_count(), 0);
    EXPECT_FALSE(lock.is_held_by_current_thread());
    EXPECT_TRUE(lock.is_locked());
    EXPECT_FALSE(lock.try_lock());
  });
  for (int expected = 4; expected >= 1; --expected) {
    lock.unlock();
    EXPECT_EQ(lock.hold_count(), expected);
    EXPECT_TRUE(lock.is_locked());
  }
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_FALSE(lock.is_locked());
  EXPECT_FALSE(lock.is_held_by_current_thread());
  on_other_thread([&] {
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
  });

  // Deep reentrancy.
  for (int i = 0; i < 10'000; ++i) lock.lock();
  EXPECT_EQ(lock.hold_count(), 10'000);
  for (int i = 0; i < 10'000; ++i) lock.unlock();
  EXPECT_FALSE(lock.is_locked());
}

TEST_P(ReentrantLockModes, NonOwnerUnlockThrowsAndChangesNothing) {
  ReentrantLock lock(GetParam());
  EXPECT_TRUE(throws_not_permitted([&] { lock.unlock(); })) << "unlock of an unlocked lock";
  EXPECT_FALSE(lock.is_locked());
  EXPECT_TRUE(lock.try_lock()) << "a refused unlock must leave a free lock free";
  lock.lock();
  on_other_thread([&] {
    EXPECT_TRUE(throws_not_permitted([&] { lock.unlock(); })) << "unlock by a non-owner";
    EXPECT_TRUE(lock.is_locked());
    EXPECT_FALSE(lock.try_lock()) << "a non-owner's refused unlock must not release the lock";
    EXPECT_FALSE(lock.try_lock_for(5ms));
  });
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(lock.hold_count(), 2) << "a refused unlock must not change the owner's hold count";
  lock.unlock();
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  EXPECT_TRUE(throws_not_permitted([&] { lock.unlock(); })) << "one unlock too many";
  EXPECT_FALSE(lock.is_locked());
}

TEST_P(ReentrantLockModes, QueueLengthCountsWaiters) {
  ReentrantLock lock(GetParam());
  lock.lock();
  EXPECT_FALSE(lock.has_queued_threads());
  std::vector<std::jthread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      lock.lock();
      lock.unlock();
    });
    ASSERT_TRUE(eventually([&] { return lock.queue_length() == i + 1; }));
  }
  EXPECT_TRUE(lock.has_queued_threads());
  lock.unlock();
  waiters.clear();
  EXPECT_EQ(lock.queue_length(), 0);
  EXPECT_FALSE(lock.is_locked());
}

TEST_P(ReentrantLockModes, TimedTryOnAHeldLockTimesOutNoEarlierThanAsked) {
  ReentrantLock lock(GetParam());
  lock.lock();
  on_other_thread([&] {
    const auto t0 = Clock::now();
    EXPECT_FALSE(lock.try_lock_for(25ms));
    EXPECT_GE(Clock::now() - t0, 25ms);
    EXPECT_FALSE(lock.try_lock_for(0ms));
    EXPECT_FALSE(lock.try_lock_for(-1ms));
  });
  EXPECT_EQ(lock.queue_length(), 0);
  lock.unlock();
}

// ---------------------------------------------------------------------------
// Conditions
// ---------------------------------------------------------------------------

// Waits until `cond` has `n` awaiters (asking requires holding the lock).
bool until_awaiters(ReentrantLock& lock, ReentrantLock::Condition& cond, std::int64_t n) {
  return eventually([&] {
    std::lock_guard g(lock);
    return cond.wait_queue_length() == n;
  });
}

TEST_P(ReentrantLockModes, AwaitReleasesAllHoldsAndRestoresThem) {
  ReentrantLock lock(GetParam());
  ReentrantLock::Condition cond = lock.new_condition();
  std::atomic<std::int64_t> holds_after{-1};
  std::atomic<bool> held_after{false};
  std::jthread awaiter([&] {
    lock.lock();
    lock.lock();
    lock.lock();
    cond.await();
    holds_after = lock.hold_count();
    held_after = lock.is_held_by_current_thread();
    for (int i = 0; i < 3; ++i) lock.unlock();
  });
  ASSERT_TRUE(until_awaiters(lock, cond, 1));
  // That we could take the lock at all proves all three holds were released.
  ASSERT_TRUE(lock.try_lock_for(10s));
  EXPECT_EQ(lock.hold_count(), 1);
  cond.signal();
  EXPECT_EQ(cond.wait_queue_length(), 0);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(holds_after.load(), -1) << "the awaiter returned before the signaller released the lock";
  lock.unlock();
  awaiter.join();
  EXPECT_EQ(holds_after.load(), 3);
  EXPECT_TRUE(held_after.load());
  EXPECT_FALSE(lock.is_locked());
}

TEST_P(ReentrantLockModes, SignalWakesOneInFifoOrderAndSignalAllWakesTheRest) {
  constexpr int kAwaiters = 4;
  ReentrantLock lock(GetParam());
  ReentrantLock::Condition cond(lock);
  std::mutex m;
  std::vector<int> woke;
  std::vector<std::jthread> threads;
  for (int i = 0; i < kAwaiters; ++i) {
    threads.emplace_back([&, i] {
      std::lock_guard g(lock);
      cond.await();
      std::lock_guard g2(m);
      woke.push_back(i);
    });
    ASSERT_TRUE(until_awaiters(lock, cond, i + 1));
  }
  auto woken = [&] {
    std::lock_guard g(m);
    return woke.size();
  };
  for (int k = 0; k < 2; ++k) {
    {
      std::lock_guard g(lock);
      cond.signal();
      EXPECT_EQ(cond.wait_queue_length(), kAwaiters - k - 1) << "signal() must take exactly one awaiter";
    }
    ASSERT_TRUE(eventually([&] { return woken() == static_cast<std::size_t>(k + 1); }));
  }
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(woken(), 2u) << "two signals woke more than two awaiters";
  {
    std::lock_guard g(lock);
    EXPECT_TRUE(cond.has_waiters());
    cond.signal_all();
    EXPECT_FALSE(cond.has_waiters());
  }
  threads.clear();
  ASSERT_EQ(woke.size(), static_cast<std::size_t>(kAwaiters));
  EXPECT_EQ(woke[0], 0);
  EXPECT_EQ(woke[1], 1);
  {
    std::lock_guard g(lock);
    cond.signal();  // no awaiter: nothing happens
    cond.signal_all();
  }
}

TEST_P(ReentrantLockModes, AwaitForTimesOutNoEarlierThanAskedAndKeepsHolds) {
  ReentrantLock lock(GetParam());
  auto cond = lock.new_condition();
  lock.lock();
  lock.lock();
  const auto t0 = Clock::now();
  EXPECT_FALSE(cond.await_for(25ms));
  EXPECT_GE(Clock::now() - t0, 25ms);
  EXPECT_EQ(lock.hold_count(), 2);
  EXPECT_EQ(cond.wait_queue_length(), 0) << "a timed-out awaiter must leave the condition's queue";

  const auto deadline = Clock::now() + 20ms;
  EXPECT_FALSE(cond.await_until(deadline));
  EXPECT_GE(Clock::now(), deadline);
  EXPECT_EQ(lock.hold_count(), 2);

  // Zero, negative, past: false at once, lock untouched.
  EXPECT_FALSE(cond.await_for(0ms));
  EXPECT_FALSE(cond.await_for(-3ms));
  EXPECT_FALSE(cond.await_until(Clock::now() - 1s));
  EXPECT_EQ(lock.hold_count(), 2);
  lock.unlock();
  lock.unlock();
}

TEST_P(ReentrantLockModes, AwaitForReturnsTrueWhenSignalled) {
  ReentrantLock lock(GetParam());
  auto cond = lock.new_condition();
  std::atomic<int> outcome{-1};
  std::jthread awaiter([&] {
    std::lock_guard g(lock);
    outcome = cond.await_for(30s) ? 1 : 0;
    if (!lock.is_held_by_current_thread()) outcome = 2;
  });
  ASSERT_TRUE(until_awaiters(lock, cond, 1));
  {
    std::lock_guard g(lock);
    cond.signal();
  }
  awaiter.join();
  EXPECT_EQ(outcome.load(), 1);
}

TEST_P(ReentrantLockModes, ConditionNeedsTheLock) {
  ReentrantLock lock(GetParam());
  auto cond = lock.new_condition();
  EXPECT_TRUE(throws_not_permitted([&] { cond.await(); }));
  EXPECT_TRUE(throws_not_permitted([&] { (void)cond.await_for(1ms); }));
  EXPECT_TRUE(throws_not_permitted([&] { (void)cond.await_for(0ms); }));
  EXPECT_TRUE(throws_not_permitted([&] { (void)cond.await_until(Clock::now() + 1ms); }));
  EXPECT_TRUE(throws_not_permitted([&] { cond.signal(); }));
  EXPECT_TRUE(throws_not_permitted([&] { cond.signal_all(); }));
  EXPECT_TRUE(throws_not_permitted([&] { (void)cond.has_waiters(); }));
  EXPECT_FALSE(lock.is_locked());
  lock.lock();
  on_other_thread([&] {  // held, but by someone else
    EXPECT_TRUE(throws_not_permitted([&] { cond.await(); }));
    EXPECT_TRUE(throws_not_permitted([&] { cond.signal(); }));
    EXPECT_TRUE(throws_not_permitted([&] { cond.signal_all(); }));
  });
  EXPECT_EQ(lock.hold_count(), 1);
  lock.unlock();
}

// A bounded buffer with two conditions, the textbook use. Producers and
// consumers outnumber the cores; every item must arrive exactly once and
// every thread must finish (a lost signal would leave one awaiting forever).
TEST_P(ReentrantLockModes, BoundedBufferLosesNoSignal) {
  constexpr int kProducers = 3;
  constexpr int kConsumers = 3;
  constexpr int kItemsPerProducer = 2000;
  constexpr std::size_t kCapacity = 4;
  ReentrantLock lock(GetParam());
  auto not_full = lock.new_condition();
  auto not_empty = lock.new_condition();
  std::deque<int> buffer;  // guarded by lock
  int remaining = kProducers * kItemsPerProducer;  // to consume; guarded by lock
  std::atomic<long long> sum{0};
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kItemsPerProducer; ++i) {
        std::lock_guard g(lock);
        while (buffer.size() == kCapacity) {
          if (i % 3 == 0) {
            (void)not_full.await_for(200us);  // exercise timeouts racing signals
          } else {
            not_full.await();
          }
        }
        buffer.push_back(p * kItemsPerProducer + i);
        not_empty.signal();
      }
      finished.fetch_add(1);
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      for (;;) {
        std::lock_guard g(lock);
        while (buffer.empty() && remaining > 0) not_empty.await();
        if (remaining == 0) {
          not_empty.signal_all();  // let the other consumers see the end
          break;
        }
        sum.fetch_add(buffer.front());
        buffer.pop_front();
        --remaining;
        not_full.signal();
      }
      finished.fetch_add(1);
    });
  }
  if (!eventually([&] { return finished.load() == kProducers + kConsumers; }, 60s)) {
    std::fprintf(stderr, "BoundedBufferLosesNoSignal: %d threads stuck after 60 s: lost signal\n",
                 kProducers + kConsumers - finished.load());
    std::abort();
  }
  for (auto& t : threads) t.join();
  const long long n = static_cast<long long>(kProducers) * kItemsPerProducer;
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
  EXPECT_TRUE(buffer.empty());
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace
}  // namespace locklab
