#include "primitives/queued_synchronizer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "primitives/queued_synchronizer_impl.hpp"
#include "tests/eventually.hpp"

// The rules of primitives/queued_synchronizer.hpp, each observed through
// the public surface (permits, queue length, statistics). The shells'
// suites (AdaptiveMutex, ReentrantLock, Semaphore) run the conformance and
// stress tests on top; this file checks what only the synchronizer decides:
// who is woken, when, and how many.

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::eventually;

class Modes : public ::testing::TestWithParam<Fairness> {};
INSTANTIATE_TEST_SUITE_P(Both, Modes, ::testing::Values(Fairness::kUnfair, Fairness::kFair),
                         [](const auto& info) { return info.param == Fairness::kFair ? "Fair" : "Unfair"; });

// Waits until `done` threads finished, or aborts after 30 s: a thread stuck
// in acquire() cannot be joined, and a stuck waiter is the failure we look
// for (a lost wake-up).
void await_or_abort(const std::atomic<int>& done, int expected, const char* what) {
  const auto deadline = Clock::now() + 30s;
  while (done.load() < expected && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  if (done.load() < expected) {
    std::fprintf(stderr, "%s: %d of %d waiters still blocked after 30 s\n", what, expected - done.load(), expected);
    std::abort();
  }
}

// Starts `n` threads that each acquire(need) one after the other (each is
// queued before the next starts), then release nothing.
std::vector<std::jthread> queue_waiters(QueuedSynchronizer& s, int n, std::int64_t need, std::atomic<int>& done) {
  std::vector<std::jthread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&s, need, &done] {
      s.acquire(need);
      done.fetch_add(1);
    });
    EXPECT_TRUE(eventually([&] { return s.queue_length() == i + 1; }));
  }
  return ts;
}

TEST_P(Modes, UncontendedPathsCountNothing) {
  QueuedSynchronizer s(2, GetParam());
  for (int i = 0; i < 1000; ++i) {
    s.acquire(2);
    s.release(2);
    ASSERT_TRUE(s.try_acquire(1));
    ASSERT_TRUE(s.acquire_until(1, Clock::now() + 1s));
    s.release(1);
    s.release(1);
  }
  const LockStatsSnapshot st = s.stats();
  EXPECT_EQ(st.contended_acquires + st.spins + st.parks + st.wakes, 0);
  EXPECT_EQ(s.available(), 2);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST(QueuedSynchronizerTest, UnfairReleaseOfOnePermitWakesOneThread) {
  // Three queued threads, one permit: exactly one thread is woken, and it
  // takes the permit (a herd would show up as wakes > 1).
  QueuedSynchronizer s(0, Fairness::kUnfair, SpinPolicy::park_only());
  std::atomic<int> done{0};
  auto ts = queue_waiters(s, 3, 1, done);
  s.release(1);
  ASSERT_TRUE(eventually([&] { return done.load() == 1; }));
  std::this_thread::sleep_for(20ms);  // room for a wrong extra wake-up
  EXPECT_EQ(s.stats().wakes, 1);
  EXPECT_EQ(s.queue_length(), 2);
  s.release(2);
  await_or_abort(done, 3, "UnfairReleaseOfOnePermitWakesOneThread");
}

TEST(QueuedSynchronizerTest, FairHeadWakesItsSuccessorBeforeReleasing) {
  // Fair mode pre-wakes: the thread that takes the permit wakes the next
  // queued thread at once, while it still holds the permit, so that the
  // successor is running when the release comes. One release, two wakes.
  QueuedSynchronizer s(0, Fairness::kFair, SpinPolicy::park_only());
  std::atomic<int> done{0};
  auto ts = queue_waiters(s, 3, 1, done);
  s.release(1);
  ASSERT_TRUE(eventually([&] { return done.load() == 1; }));
  EXPECT_TRUE(eventually([&] { return s.stats().wakes == 2; }));
  EXPECT_EQ(s.available(), 0);
  EXPECT_EQ(s.queue_length(), 2);
  s.release(1);  // the successor is awake (or in its slot): served next
  ASSERT_TRUE(eventually([&] { return done.load() == 2; }));
  s.release(1);
  await_or_abort(done, 3, "FairHeadWakesItsSuccessorBeforeReleasing");
  EXPECT_EQ(s.queue_length(), 0);
}

TEST_P(Modes, AReleaseOfSeveralPermitsServesSeveralWaiters) {
  // One release(3) wakes the head only; the head, taking 1 and seeing 2
  // left, passes the designation on, and so on (AQS's propagate). Without
  // that the other two would sleep beside two free permits.
  QueuedSynchronizer s(0, GetParam());
  std::atomic<int> done{0};
  auto ts = queue_waiters(s, 3, 1, done);
  s.release(3);
  await_or_abort(done, 3, "AReleaseOfSeveralPermitsServesSeveralWaiters");
  EXPECT_EQ(s.available(), 0);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST_P(Modes, AWokenHeadThatTimesOutPassesTheFreePermitsOn) {
  // The head wants 2 and times out after being woken for 1 free permit;
  // the thread behind it wants 1. Nobody will release again, so unless the
  // departing head hands the wake-up on, the permit stays free beside a
  // sleeping waiter forever.
  QueuedSynchronizer s(0, GetParam());
  std::atomic<int> head_result{-1};
  std::jthread head([&] { head_result = s.acquire_until(2, Clock::now() + 100ms) ? 1 : 0; });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  std::atomic<int> done{0};
  std::jthread behind([&] {
    s.acquire(1);
    done.fetch_add(1);
  });
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 2; }));
  s.release(1);  // wakes the head, which cannot use it
  head.join();
  EXPECT_EQ(head_result.load(), 0);
  await_or_abort(done, 1, "AWokenHeadThatTimesOutPassesTheFreePermitsOn");
  EXPECT_EQ(s.available(), 0);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST_P(Modes, PermitsAreConservedUnderMixedRequestsAndTimeouts) {
  // Threads take 1-3 permits (some with timeouts), hold them briefly and
  // give them back; the count must come back exact, and every untimed
  // waiter must finish (a lost wake-up would leave one blocked).
  constexpr std::int64_t kPermits = 4;
  QueuedSynchronizer s(kPermits, GetParam());
  std::atomic<std::int64_t> in_use{0};
  std::atomic<bool> over{false};
  std::atomic<int> done{0};
  std::vector<std::thread> ts;
  constexpr int kThreads = 6;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t) + 7);
      for (int i = 0; i < 400; ++i) {
        const std::int64_t need = 1 + static_cast<std::int64_t>(rng() % 3);
        const bool timed = t % 2 == 0;
        if (timed) {
          if (!s.acquire_until(need, Clock::now() + std::chrono::microseconds(rng() % 200))) continue;
        } else {
          s.acquire(need);
        }
        if (in_use.fetch_add(need) + need > kPermits) over = true;
        if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
        in_use.fetch_sub(need);
        s.release(need);
      }
      done.fetch_add(1);
    });
  }
  await_or_abort(done, kThreads, "PermitsAreConservedUnderMixedRequestsAndTimeouts");
  for (auto& t : ts) t.join();
  EXPECT_FALSE(over.load()) << "more permits in use than exist";
  EXPECT_EQ(s.available(), kPermits);
  EXPECT_EQ(s.queue_length(), 0);
}

// The process-wide lot, except that the first designated successor it
// wakes (token 0, on the synchronizer's own address) is held back for
// `hold` before park_if returns: a thread woken but kept off the cores, as
// the scheduler keeps one when every core is busy.
struct HeldBackLot {
  struct Control {
    std::chrono::milliseconds hold{300};
    std::atomic<bool> armed{true};
    std::atomic<bool> holding{false};
  };
  Control* control;

  ParkResult park_if(const void* address, detail::FunctionRef<bool()> validate,
                     std::optional<parking_lot::Clock::time_point> deadline) noexcept {
    const ParkResult r = ThreadLot{}.park_if(address, validate, deadline);
    if (r.status == ParkStatus::kUnparked && r.token == 0 && control->armed.exchange(false)) {
      control->holding = true;
      std::this_thread::sleep_for(control->hold);
      control->holding = false;
    }
    return r;
  }
  UnparkResult unpark_one(const void* address, detail::FunctionRef<std::intptr_t(UnparkResult)> callback) noexcept {
    return ThreadLot{}.unpark_one(address, callback);
  }
};

TEST(QueuedSynchronizerTest, AThreadAboutToQueueWakesOneMoreBesideALateSuccessor) {
  // "A late successor": the designated successor A is woken but held off the
  // cores; a thread N that then has to queue wakes the next queued thread B
  // as well (B is not designated: it finds no permit and queues again).
  // Without that, B would sleep until A ran, however long that took.
  HeldBackLot::Control control;
  BasicQueuedSynchronizer<HeldBackLot> s(0, Fairness::kUnfair, SpinPolicy::park_only(), std::in_place,
                                         &control);
  std::atomic<int> done{0};
  auto waiter = [&] {
    s.acquire(1);
    done.fetch_add(1);
  };
  std::jthread a(waiter);
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 1; }));
  std::jthread b(waiter);
  ASSERT_TRUE(eventually([&] { return s.queue_length() == 2; }));
  s.release(1);  // wakes A, which the lot holds back
  ASSERT_TRUE(eventually([&] { return control.holding.load(); }));
  ASSERT_TRUE(s.try_acquire(1));  // barge: N will find no permit
  std::this_thread::sleep_for(5ms);  // A is now late (> 50 us)
  EXPECT_EQ(s.stats().wakes, 1);
  std::jthread n(waiter);
  EXPECT_TRUE(eventually([&] { return s.stats().wakes == 2; })) << "wakes: " << s.stats().wakes;
  EXPECT_TRUE(control.holding.load()) << "the hold ended first: the test proves nothing";
  EXPECT_EQ(done.load(), 0);
  s.release(3);  // A, when it runs, takes one and passes the rest on
  await_or_abort(done, 3, "AThreadAboutToQueueWakesOneMoreBesideALateSuccessor");
  EXPECT_EQ(s.available(), 0);
  EXPECT_EQ(s.queue_length(), 0);
}

TEST(QueuedSynchronizerTest, TryReleaseRefusesOverflowAndChangesNothing) {
  QueuedSynchronizer s(5);
  EXPECT_FALSE(s.try_release(3, 7));
  EXPECT_EQ(s.available(), 5);
  EXPECT_TRUE(s.try_release(2, 7));
  EXPECT_EQ(s.available(), 7);
}

}  // namespace

// The synchronizer's slow paths over the test's lot.
template class BasicQueuedSynchronizer<HeldBackLot>;

}  // namespace locklab
