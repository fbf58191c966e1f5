#include "primitives/semaphore.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using locklab::testing::eventually;

// Waits (bounded) for `finished` to reach `n`; if it never does, threads are
// stuck in acquire() for good and cannot be joined: say so and abort (a
// failed test with a message beats a ctest timeout).
void await_finished_or_abort(const std::atomic<int>& finished, int n, const Semaphore& s, const char* what) {
  if (eventually([&] { return finished.load() == n; }, 60s)) return;
  std::fprintf(stderr, "%s: %d of %d threads still waiting after 60 s (queue_length %td, permits %td): lost wake-up\n",
               what, n - finished.load(), n, s.queue_length(), s.available_permits());
  std::fflush(stderr);
  std::abort();
}

class SemaphoreModes : public ::testing::TestWithParam<Fairness> {};
INSTANTIATE_TEST_SUITE_P(Both, SemaphoreModes, ::testing::Values(Fairness::kUnfair, Fairness::kFair),
                         [](const auto& info) { return info.param == Fairness::kFair ? "Fair" : "Unfair"; });

TEST_P(SemaphoreModes, CountsPermits) {
  Semaphore s(3, GetParam());
  EXPECT_EQ(s.is_fair(), GetParam() == Fairness::kFair);
  EXPECT_EQ(s.available_permits(), 3);
  s.acquire(2);
  EXPECT_EQ(s.available_permits(), 1);
  EXPECT_FALSE(s.try_acquire(2));
  EXPECT_EQ(s.available_permits(), 1);
  EXPECT_TRUE(s.try_acquire());
  EXPECT_EQ(s.available_permits(), 0);
  s.release(3);
  EXPECT_EQ(s.available_permits(), 3);
  EXPECT_FALSE(s.has_queued_threads());
  EXPECT_EQ(s.queue_length(), 0);
}

TEST_P(SemaphoreModes, InvalidArgumentsThrowAndChangeNothing) {
  EXPECT_THROW(Semaphore(-1, GetParam()), std::invalid_argument);
  EXPECT_THROW(Semaphore(Semaphore::kMaxPermits + 1, GetParam()), std::invalid_argument);
  Semaphore s(2, GetParam());
  EXPECT_THROW(s.acquire(0), std::invalid_argument);
  EXPECT_THROW(s.acquire(-1), std::invalid_argument);
  EXPECT_THROW(s.acquire(Semaphore::kMaxPermits + 1), std::invalid_argument);
  EXPECT_THROW((void)s.try_acquire(0), std::invalid_argument);
  EXPECT_THROW((void)s.try_acquire_for(1ms, -2), std::invalid_argument);
  EXPECT_THROW((void)s.try_acquire_until(Clock::now() + 1ms, 0), std::invalid_argument);
  EXPECT_THROW(s.release(0), std::invalid_argument);
  EXPECT_THROW(s.release(-3), std::invalid_argument);
  EXPECT_EQ(s.available_permits(), 2);

  Semaphore full(Semaphore::kMaxPermits, GetParam());
  EXPECT_THROW(full.release(), std::invalid_argument);
  EXPECT_EQ(full.available_permits(), Semaphore::kMaxPermits);
  Semaphore almost(Semaphore::kMaxPermits - 1, GetParam());
  EXPECT_THROW(almost.release(2), std::invalid_argument);
  EXPECT_EQ(almost.available_permits(), Semaphore::kMaxPermits - 1);
  almost.release(1);
  EXPECT_EQ(almost.available_permits(), Semaphore::kMaxPermits);
}

TEST_P(SemaphoreModes, OverflowingReleaseWithWaitersQueuedThrowsAndChangesNothing) {
  // With a thread queued for every permit: the overshooting add is taken
  // back, and the waiter (which the take-back may wake) finds too few
  // permits and waits on.
  Semaphore s(Semaphore::kMaxPermits - 1, GetParam());
  std::atomic<bool> got{false};
  std::jthread waiter([&] {
    s.acquire(Semaphore::kMaxPermits);
    got = true;
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  EXPECT_THROW(s.release(2), std::invalid_argument);
  EXPECT_EQ(s.available_permits(), Semaphore::kMaxPermits - 1);
  EXPECT_EQ(s.queue_length(), 1);
  EXPECT_FALSE(got.load());
  s.release(1);
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(s.available_permits(), 0);
}

TEST_P(SemaphoreModes, NoThreadCanTakeTheExcessOfARefusedRelease) {
  // release() adds first and takes an overshooting add back (see its
  // contract). Here one thread keeps releasing 10 permits too many while
  // another keeps asking for one permit more than exist, which it could
  // get only from such an add before it is taken back, and a third takes
  // and gives back one permit, whose valid release must never be refused.
  // Bounded: 200,000 rounds each, or 2 s.
  constexpr std::ptrdiff_t kReal = Semaphore::kMaxPermits - 3;
  Semaphore s(kReal, GetParam());
  const auto stop_at = Clock::now() + 2s;
  std::atomic<bool> stop{false};
  std::atomic<long> attempts{0}, refused{0}, excess_taken{0}, valid_refused{0};
  std::vector<std::jthread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < 200'000 && !stop.load(std::memory_order_relaxed); ++i) {
      attempts.fetch_add(1, std::memory_order_relaxed);
      try {
        s.release(10);
      } catch (const std::invalid_argument&) {
        refused.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 200'000 && !stop.load(std::memory_order_relaxed); ++i) {
      if (s.try_acquire(kReal + 1)) {
        excess_taken.fetch_add(1, std::memory_order_relaxed);
        s.release(kReal + 1);
      }
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 200'000 && !stop.load(std::memory_order_relaxed); ++i) {
      s.acquire(1);
      try {
        s.release(1);
      } catch (const std::invalid_argument&) {
        valid_refused.fetch_add(1, std::memory_order_relaxed);
      }
      if (i % 1024 == 0 && Clock::now() > stop_at) stop = true;
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(refused.load(), attempts.load());
  EXPECT_EQ(excess_taken.load(), 0) << "a thread took permits that a refused release had added for an instant";
  EXPECT_EQ(valid_refused.load(), 0) << "a valid release was refused while another one overshot";
  EXPECT_EQ(s.available_permits(), kReal);
}

TEST_P(SemaphoreModes, ReleaseFromAnotherThreadWakesTheAcquirer) {
  // The ticket-sale semaphore herd's point: no owner, so a thread that never
  // acquired may release.
  Semaphore s(0, GetParam());
  std::atomic<bool> got{false};
  std::jthread acquirer([&] {
    s.acquire();
    got = true;
  });
  ASSERT_TRUE(eventually([&] { return s.has_queued_threads(); }));
  EXPECT_FALSE(got.load());
  std::jthread([&] { s.release(); }).join();
  acquirer.join();
  EXPECT_TRUE(got.load());

  // And the other way round: acquired here, released by another thread.
  s.release();
  s.acquire();
  std::jthread([&] { s.release(); }).join();
  EXPECT_EQ(s.available_permits(), 1);
}

TEST_P(SemaphoreModes, TimedTryTimesOutNoEarlierThanAsked) {
  Semaphore s(0, GetParam());
  const auto t0 = Clock::now();
  EXPECT_FALSE(s.try_acquire_for(30ms));
  EXPECT_GE(Clock::now() - t0, 30ms);

  const auto deadline = Clock::now() + 30ms;
  EXPECT_FALSE(s.try_acquire_until(deadline));
  EXPECT_GE(Clock::now(), deadline);

  // Another clock is converted to steady once.
  const auto t1 = Clock::now();
  EXPECT_FALSE(s.try_acquire_until(std::chrono::system_clock::now() + 20ms, 2));
  EXPECT_GE(Clock::now() - t1, 19ms);  // 1 ms slack: two clocks read apart
  EXPECT_EQ(s.queue_length(), 0) << "a timed-out waiter must leave the queue";
  EXPECT_EQ(s.available_permits(), 0);
}

TEST_P(SemaphoreModes, ZeroAndNegativeTimeoutsAreASingleTry) {
  Semaphore s(1, GetParam());
  EXPECT_TRUE(s.try_acquire_for(0ms));
  EXPECT_FALSE(s.try_acquire_for(0ms));
  EXPECT_FALSE(s.try_acquire_for(-5ms));
  EXPECT_FALSE(s.try_acquire_until(Clock::now() - 1s));
  EXPECT_EQ(s.queue_length(), 0);
  s.release();
  EXPECT_TRUE(s.try_acquire_for(-5ms));
  s.release();
  EXPECT_TRUE(s.try_acquire_until(Clock::now() - 1s));
  EXPECT_EQ(s.stats().contended_acquires, 0) << "a single try never queues";
}

TEST_P(SemaphoreModes, TimedTrySucceedsWhenReleased) {
  Semaphore s(0, GetParam());
  std::atomic<int> outcome{-1};
  std::jthread waiter([&] { outcome = s.try_acquire_for(30s, 2) ? 1 : 0; });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  s.release();
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(outcome.load(), -1) << "one permit is not enough for a request of two";
  s.release();
  waiter.join();
  EXPECT_EQ(outcome.load(), 1);
  EXPECT_EQ(s.available_permits(), 0);
}

TEST_P(SemaphoreModes, StatsOnlyOnTheSlowPath) {
  Semaphore s(1, GetParam());
  for (int i = 0; i < 1000; ++i) {
    s.acquire();
    s.release();
    ASSERT_TRUE(s.try_acquire());
    s.release();
  }
  LockStatsSnapshot st = s.stats();
  EXPECT_EQ(st.contended_acquires, 0);
  EXPECT_EQ(st.parks, 0);
  EXPECT_EQ(st.wakes, 0);

  s.acquire();
  std::jthread waiter([&] {
    s.acquire();
    s.release();
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  std::this_thread::sleep_for(5ms);  // let it park (not required for the counts below)
  s.release();
  waiter.join();
  st = s.stats();
  EXPECT_EQ(st.contended_acquires, 1);
  EXPECT_GE(st.wakes, 1);
  EXPECT_GE(st.parks, 1) << "queue_length() showed it queued";
  // Unfair: it queues without spinning (newcomers do not spin by default)
  // and does not spin once woken either: the permit is there when it runs.
  // Fair: a newcomer spins at most one budget (or, spinning alone, the lone
  // spinner's allowance) before it queues, and none once woken.
  if (GetParam() == Fairness::kUnfair) {
    EXPECT_EQ(st.spins, 0);
  } else {
    EXPECT_LE(st.spins, static_cast<std::int64_t>(std::max(SpinPolicy::kDefaultMaxSpins, SpinPolicy::kLoneSpinPolls)));
  }
}

// Fair: waiters are served strictly in arrival order (grant order, observed
// one permit at a time so wake-up scheduling cannot reorder the record).
TEST(SemaphoreTest, FairIsFifo) {
  constexpr int kWaiters = 6;
  Semaphore s(0, Fairness::kFair);
  std::mutex m;
  std::vector<int> order;
  std::vector<std::jthread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      s.acquire();
      std::lock_guard g(m);
      order.push_back(i);
    });
    ASSERT_TRUE(eventually([&] { return s.queue_length() == i + 1; }));
  }
  for (int k = 0; k < kWaiters; ++k) {
    s.release();
    ASSERT_TRUE(eventually([&] {
      std::lock_guard g(m);
      return static_cast<int>(order.size()) == k + 1;
    }));
  }
  threads.clear();
  const std::vector<int> expected{0, 1, 2, 3, 4, 5};
  EXPECT_EQ(order, expected);
}

TEST(SemaphoreTest, FairLargeRequestAtTheHeadBlocksSmallerOnesBehindIt) {
  Semaphore s(3, Fairness::kFair);
  std::atomic<bool> big_done{false}, small_done{false};
  std::jthread big([&] {
    s.acquire(5);
    big_done = true;
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  std::jthread small([&] {
    s.acquire(1);
    small_done = true;
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 2; }));
  EXPECT_FALSE(s.try_acquire(1)) << "fair: no barging past the queue, even with 3 permits free";
  EXPECT_FALSE(s.try_acquire_for(0ms));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(big_done.load());
  EXPECT_FALSE(small_done.load()) << "the small request overtook the large one at the head";
  s.release(2);  // 5 free: all go to the head
  big.join();
  EXPECT_TRUE(big_done.load());
  EXPECT_EQ(s.available_permits(), 0);
  EXPECT_FALSE(small_done.load());
  s.release(1);
  small.join();
  EXPECT_TRUE(small_done.load());
  EXPECT_EQ(s.available_permits(), 0);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST(SemaphoreTest, FairTimedOutHeadUnblocksTheWaitersBehindIt) {
  Semaphore s(3, Fairness::kFair);
  std::atomic<int> big_outcome{-1};
  std::jthread big([&] { big_outcome = s.try_acquire_for(100ms, 5) ? 1 : 0; });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  std::atomic<bool> small_done{false};
  std::jthread small([&] {
    s.acquire(2);
    small_done = true;
  });
  big.join();
  EXPECT_EQ(big_outcome.load(), 0);
  small.join();  // must not hang: the head's departure grants the permits behind it
  EXPECT_TRUE(small_done.load());
  EXPECT_EQ(s.available_permits(), 1);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST(SemaphoreTest, UnfairLetsArrivalsBargePastAWaitingLargeRequest) {
  Semaphore s(3, Fairness::kUnfair);
  std::atomic<bool> big_done{false};
  std::jthread big([&] {
    s.acquire(5);
    big_done = true;
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  EXPECT_TRUE(s.try_acquire(1)) << "unfair: an arrival takes free permits past the queue";
  s.release(3);  // 5 free now
  big.join();
  EXPECT_TRUE(big_done.load());
  EXPECT_EQ(s.available_permits(), 0);
}

// Semaphore(1) as a mutex around plain (non-atomic) data: the counts must
// add up, and under TSan a missing happens-before on any hand-off path (fast
// path, barging, fair grant, grant by a departing waiter) is reported as a
// race even when the counts happen to be right.
TEST_P(SemaphoreModes, ReleaseHappensBeforeTheNextAcquire) {
  constexpr int kThreads = 6;
  constexpr int kIterations = 2'000;
  Semaphore s(1, GetParam());
  long counter = 0;  // guarded by s
  long pair[2] = {0, 0};
  std::atomic<long> breaks{0};
  std::atomic<long> done{0};
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        if ((i + t) % 4 == 0) {
          if (!s.try_acquire_for(std::chrono::microseconds(100))) continue;
        } else if ((i + t) % 4 == 1) {
          if (!s.try_acquire()) continue;
        } else {
          s.acquire();
        }
        if (pair[0] != pair[1]) breaks.fetch_add(1);
        ++pair[0];
        counter = counter + 1;
        ++pair[1];
        if (i % 100 == 0) std::this_thread::sleep_for(20us);
        s.release();
        done.fetch_add(1);
      }
      finished.fetch_add(1);
    });
  }
  await_finished_or_abort(finished, kThreads, s, "Semaphore(1) as a mutex");
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, done.load());
  EXPECT_EQ(breaks.load(), 0);
  EXPECT_EQ(s.available_permits(), 1);
}

// Many threads, mixed request sizes, mixed untimed and (short) timed
// acquires, so grants, barging, timeouts racing grants, and departures that
// pass wake-ups on all happen. Every thread must finish (no lost wake-up),
// at most `kPermits` permits may be out at once, and all come back.
TEST_P(SemaphoreModes, NoLostWakeupsUnderStress) {
  constexpr int kPermits = 3;
  constexpr int kThreads = 8;
  constexpr int kIterations = 1500;
  Semaphore s(kPermits, GetParam());
  std::atomic<int> out{0};
  std::atomic<int> max_out{0};
  std::atomic<int> finished{0};
  std::atomic<long> timeouts{0};
  // Hold every permit until a thread has queued, so that the run contends
  // even where threads would otherwise run one after the other (under
  // ThreadSanitizer a thread can finish its loop before the next starts).
  s.acquire(kPermits);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        const int n = 1 + (i + t) % 2;
        bool got = true;
        if ((i + t) % 5 == 0) {
          got = s.try_acquire_for(std::chrono::microseconds(50 + (i % 7) * 20), n);
          if (!got) timeouts.fetch_add(1, std::memory_order_relaxed);
        } else {
          s.acquire(n);
        }
        if (!got) continue;
        const int now = out.fetch_add(n) + n;
        int seen = max_out.load();
        while (now > seen && !max_out.compare_exchange_weak(seen, now)) {
        }
        if (i % 64 == 0) std::this_thread::sleep_for(50us);  // make waiters park
        out.fetch_sub(n);
        s.release(n);
      }
      finished.fetch_add(1);
    });
  }
  EXPECT_TRUE(eventually([&] { return s.queue_length() > 0; }));
  s.release(kPermits);
  await_finished_or_abort(finished, kThreads, s, "Semaphore stress");
  for (auto& th : threads) th.join();
  EXPECT_LE(max_out.load(), kPermits);
  EXPECT_EQ(s.available_permits(), kPermits);
  EXPECT_EQ(s.queue_length(), 0);
  EXPECT_GT(s.stats().contended_acquires, 0) << "the stress never contended: it tested nothing";
}

}  // namespace
}  // namespace locklab
