// my_ticket_lock_test.cpp — the checks of the exercise ticket: the lab's
// conformance suite with the FIFO promise (checked deterministically through
// queue_length()), plus queue_length() itself. Run with
//   exercises/check.sh ticket
#include <my_ticket_lock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "primitives/cpu_relax.hpp"
#include "tests/eventually.hpp"
#include "tests/primitives/lock_conformance.hpp"

template <>
struct locklab::testing::LockTraits<locklab::exercises::MyTicketLock> {
  static constexpr bool fifo = true;  // the promise a ticket lock makes
};

using MyTicketLocks = ::testing::Types<locklab::exercises::MyTicketLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyTicketLock, LockConformance, MyTicketLocks);

namespace locklab::exercises {
namespace {

TEST(MyTicketLockTest, QueueLengthCountsTheWaitersBehindTheHolder) {
  MyTicketLock lock;
  EXPECT_EQ(lock.queue_length(), 0) << "a free lock has nobody waiting";
  lock.lock();
  EXPECT_EQ(lock.queue_length(), 0) << "the holder is not waiting";
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      lock.lock();
      lock.unlock();
    });
  }
  const bool counted = testing::eventually([&] { return lock.queue_length() == 3; });
  if (!counted) {
    // Let them in anyway (never leave threads stuck behind a failed check).
    lock.unlock();
    for (auto& w : waiters) w.join();
    FAIL() << "3 threads blocked in lock() behind the holder, queue_length() = " << lock.queue_length();
  }
  EXPECT_FALSE(lock.try_lock()) << "try_lock succeeded on a held lock";
  lock.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(lock.queue_length(), 0) << "everyone left";
  EXPECT_TRUE(lock.try_lock()) << "try_lock failed on a free lock";
  lock.unlock();
}


// Mutual exclusion counted by `occupied` (how many threads are inside; a
// thread that enters and finds someone there is an overlap) and by a plain
// counter that only mutual exclusion keeps exact.
struct CriticalSection {
  std::atomic<int> occupied{0};
  std::atomic<std::int64_t> overlaps{0};
  std::int64_t entries = 0;
  void enter_and_leave() {
    if (occupied.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1, std::memory_order_relaxed);
    ++entries;
    for (int p = 0; p < 16; ++p) cpu_relax();  // long enough for an overlapping holder to show
    occupied.fetch_sub(1, std::memory_order_relaxed);
  }
};

// lock() and try_lock() on the same lock at once. A try_lock that checks
// (loads both counters, sees them equal) and then acts (a fetch_add, not a
// compare-exchange) lets a lock() take the ticket in between and enter; the
// try then enters beside it. That gap is a few instructions wide, too narrow
// for a hammer to hit, so the check makes it happen: through the counters'
// after-load hook (exercises/support/counted_atomic.hpp), right after the
// try's k-th load, another thread runs lock() to completion and stays inside
// while the try goes on (k = 1..4: after every look a try_lock may take).
TEST(MyTicketLockTest, ALockThatArrivesDuringATryLockIsNotJoinedByIt) {
  for (int k = 1; k <= 4; ++k) {
    SCOPED_TRACE(::testing::Message() << "the lock() ran after the try's load number " << k);
    MyTicketLock lock;
    std::atomic<bool> go{false}, locker_inside{false}, trier_done{false};
    std::jthread locker([&] {
      testing::eventually([&] { return go.load(); });
      lock.lock();
      locker_inside = true;
      testing::eventually([&] { return trier_done.load(); });  // stays inside until the try is over
      lock.unlock();
    });
    int loads = 0;
    set_after_load_hook([&] {
      if (++loads != k) return;
      go = true;
      testing::eventually([&] { return locker_inside.load(); });
    });
    const bool got = lock.try_lock();
    set_after_load_hook(nullptr);
    const bool beside_the_locker = got && locker_inside.load();
    if (got) lock.unlock();
    trier_done = true;
    go = true;  // if the try made fewer than k loads, the lock() comes after it
    locker.join();
    EXPECT_FALSE(beside_the_locker) << "try_lock() returned true while the lock() that arrived during it held the lock";
    EXPECT_EQ(lock.queue_length(), 0);
    EXPECT_TRUE(lock.try_lock()) << "try_lock failed on a free lock";
    lock.unlock();
  }
}

// The counters wrap at 2^32. Started at 2^32 - 2, the holder has ticket
// 2^32 - 2 and the next two waiters get 2^32 - 1 and 0: a wait that compares
// `serving < mine` instead of `serving != mine` lets ticket 0 in at once.
// Then two threads take the lock 1000 times each across the wrap.
TEST(MyTicketLockTest, WaitersStayOutAcrossTheWrapOfTheCounters) {
  using namespace std::chrono_literals;
  constexpr std::uint32_t kMax = std::numeric_limits<std::uint32_t>::max();
  {
    MyTicketLock lock(kMax - 1);
    std::atomic<int> entered{0};
    lock.lock();
    std::vector<std::thread> waiters;
    for (int i = 1; i <= 2; ++i) {  // one at a time, so that the tickets go out in this order
      waiters.emplace_back([&] {
        lock.lock();
        entered.fetch_add(1);
        lock.unlock();
      });
      testing::eventually([&] { return lock.queue_length() == i || entered.load() > 0; });
    }
    // A bounded wait for a wrong entry to show (a correct lock lets nobody in).
    testing::eventually([&] { return entered.load() > 0; }, 100ms);
    const int entered_while_held = entered.load();
    // Never leave a thread stuck: a wrong lock may let the other one in too.
    if (entered_while_held > 0) testing::eventually([&] { return entered.load() == 2; });
    lock.unlock();
    for (auto& w : waiters) w.join();
    ASSERT_EQ(entered_while_held, 0) << "a waiter entered while the holder of ticket 2^32 - 2 held the lock "
                                        "(tickets 2^32 - 1 and 0 were waiting: is 0 compared with < ?)";
    EXPECT_EQ(entered.load(), 2);
    EXPECT_EQ(lock.queue_length(), 0);
  }
  constexpr int kIterations = 1000;
  MyTicketLock lock(kMax - kIterations);  // 2 x 1000 acquisitions: the wrap is in the middle
  CriticalSection cs;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kIterations; ++i) {
          lock.lock();
          cs.enter_and_leave();
          lock.unlock();
        }
      });
    }
  }  // joins
  EXPECT_EQ(cs.overlaps.load(), 0) << "two holders at once across the wrap";
  EXPECT_EQ(cs.entries, 2 * kIterations);
  EXPECT_EQ(lock.queue_length(), 0);
  EXPECT_TRUE(lock.try_lock()) << "try_lock failed on a free lock after the wrap";
  lock.unlock();
}

}  // namespace
}  // namespace locklab::exercises
