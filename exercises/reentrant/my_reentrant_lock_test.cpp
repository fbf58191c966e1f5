// my_reentrant_lock_test.cpp — the checks of the exercise reentrant: the
// lab's conformance suite on the wrapper around three different inner locks
// (std::mutex; the lab's AdaptiveMutex, which has timed tries; the lab's
// TtasLock), and the ownership rules the conformance suite cannot know about:
// re-entry, hold counts, unlock by a non-owner. Run with
//   exercises/check.sh reentrant
#include <my_reentrant_lock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>

#include "primitives/adaptive_mutex.hpp"
#include "primitives/ttas_lock.hpp"
#include "tests/primitives/lock_conformance.hpp"

using MyReentrantLocks =
    ::testing::Types<locklab::exercises::MyReentrantLock<std::mutex>, locklab::exercises::MyReentrantLock<locklab::AdaptiveMutex>,
                     locklab::exercises::MyReentrantLock<locklab::TtasLock>>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyReentrantLock, LockConformance, MyReentrantLocks);
// (Not std::timed_mutex for the timed tries: GCC 12's ThreadSanitizer does not
// intercept its try_lock_for and reports a false "unlock of an unlocked mutex".)

namespace locklab::exercises {
namespace {

using namespace std::chrono_literals;

static_assert(testing::TimedLockable<MyReentrantLock<AdaptiveMutex>>, "timed tries when the inner lock has them");
static_assert(!testing::TimedLockable<MyReentrantLock<std::mutex>>, "no timed tries when the inner lock has none");

// An inner lock for one thread that counts what the wrapper asks of it and
// reports a second lock() by its holder instead of deadlocking on it.
class CountingLock {
 public:
  void lock() {
    if (locked_) {
      ++relocks_;  // a real mutex would deadlock here
      return;
    }
    locked_ = true;
    ++locks_;
  }
  bool try_lock() {
    if (locked_) {
      ++relocks_;
      return false;
    }
    locked_ = true;
    ++locks_;
    return true;
  }
  void unlock() {
    if (!locked_) ++bad_unlocks_;
    locked_ = false;
    ++unlocks_;
  }
  int locks_ = 0, unlocks_ = 0, relocks_ = 0, bad_unlocks_ = 0;
  bool locked_ = false;
};

// Runs `f` on another thread and waits for it (bounded by f itself).
template <class F>
void on_another_thread(F f) {
  std::thread(f).join();
}

TEST(MyReentrantLockTest, TheOwnerReentersWithoutTakingTheInnerLockAgain) {
  MyReentrantLock<CountingLock> lock;
  lock.lock();
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.hold_count(), 3);
  EXPECT_EQ(lock.inner().locks_, 1) << "the inner lock is taken once per ownership";
  EXPECT_EQ(lock.inner().relocks_, 0) << "a re-entry asked the inner lock again (a real mutex deadlocks there)";
  lock.unlock();
  lock.unlock();
  EXPECT_EQ(lock.inner().unlocks_, 0) << "the inner lock was released while the owner still held it once";
  lock.unlock();
  EXPECT_EQ(lock.inner().unlocks_, 1) << "the last unlock releases the inner lock";
  EXPECT_EQ(lock.inner().bad_unlocks_, 0);
  EXPECT_EQ(lock.hold_count(), 0);
}

TEST(MyReentrantLockTest, HoldCountFollowsLockAndUnlockAndOthersWaitUntilZero) {
  MyReentrantLock<std::mutex> lock;
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_FALSE(lock.is_held_by_current_thread());
  lock.lock();
  lock.lock();
  lock.lock();
  EXPECT_EQ(lock.hold_count(), 3);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  on_another_thread([&] {
    EXPECT_EQ(lock.hold_count(), 0) << "another thread's hold count";
    EXPECT_FALSE(lock.is_held_by_current_thread());
    const bool got = lock.try_lock();
    EXPECT_FALSE(got) << "another thread took a held lock";
    if (got) lock.unlock();
  });
  lock.unlock();
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 1);
  on_another_thread([&] {
    const bool got = lock.try_lock();
    EXPECT_FALSE(got) << "the lock was free with one hold left";
    if (got) lock.unlock();
  });
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 0);
  on_another_thread([&] {
    const bool got = lock.try_lock();
    EXPECT_TRUE(got) << "the lock stayed held after the last unlock";
    if (got) lock.unlock();
  });
}

TEST(MyReentrantLockTest, UnlockByANonOwnerIsOperationNotPermittedAndChangesNothing) {
  MyReentrantLock<std::mutex> lock;
  auto expect_not_permitted = [&](const char* when) {
    try {
      lock.unlock();
      ADD_FAILURE() << "unlock() by a non-owner returned normally (" << when << ")";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::operation_not_permitted) << when;
    }
  };
  expect_not_permitted("free lock");
  lock.lock();
  on_another_thread([&] { expect_not_permitted("held by another thread"); });
  EXPECT_TRUE(lock.is_held_by_current_thread()) << "a refused unlock changed the owner";
  EXPECT_EQ(lock.hold_count(), 1) << "a refused unlock changed the hold count";
  on_another_thread([&] {
    const bool got = lock.try_lock();
    EXPECT_FALSE(got) << "a refused unlock released the lock";
    if (got) lock.unlock();
  });
  lock.unlock();
  expect_not_permitted("after the owner's last unlock");
}

TEST(MyReentrantLockTest, TimedTriesReenterAndWaitForTheInnerLock) {
  MyReentrantLock<AdaptiveMutex> lock;
  ASSERT_TRUE(lock.try_lock_for(0ms));
  EXPECT_TRUE(lock.try_lock_for(0ms)) << "the owner re-enters";
  EXPECT_TRUE(lock.try_lock_until(std::chrono::steady_clock::now() - 1s)) << "the owner re-enters, whatever the deadline";
  EXPECT_EQ(lock.hold_count(), 3);
  on_another_thread([&] {
    const bool got = lock.try_lock_for(20ms);
    EXPECT_FALSE(got) << "another thread's timed try took a held lock";
    if (got) lock.unlock();
  });
  lock.unlock();
  lock.unlock();
  lock.unlock();
  on_another_thread([&] {
    const bool got = lock.try_lock_for(1s);
    EXPECT_TRUE(got);
    EXPECT_EQ(lock.hold_count(), got ? 1 : 0);
    if (got) lock.unlock();
  });
}

}  // namespace
}  // namespace locklab::exercises
