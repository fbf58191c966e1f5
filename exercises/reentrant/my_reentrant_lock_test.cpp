// my_reentrant_lock_test.cpp — the checks of the exercise reentrant: the
// lab's conformance suite on the wrapper around three different inner locks
// (std::mutex; the lab's AdaptiveMutex, which has timed tries; the lab's
// TtasLock), and the ownership rules the conformance suite cannot know about:
// re-entry, hold counts, unlock by a non-owner. Run with
//   exercises/check.sh reentrant
#include <my_reentrant_lock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>

#include "primitives/adaptive_mutex.hpp"
#include "primitives/ttas_lock.hpp"
#include "tests/eventually.hpp"
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


// unlock(), reporting a refusal as a failure of the check instead of letting
// the exception end the thread (a wrong lock must fail its checks, not crash
// the grader). True if it returned normally.
template <class L>
bool unlock_or_fail(L& lock, const char* what) {
  try {
    lock.unlock();
    return true;
  } catch (const std::system_error& e) {
    ADD_FAILURE() << what << " threw: " << e.what();
    return false;
  }
}

// A waiter must change nothing before it owns the lock: the owner holds it
// 3 times while another thread tries (false) and then blocks in lock(); the
// owner's hold count stays 3, 2, 1 through its unlocks and the waiter gets
// the lock only after the last one. (A lock() that writes the hold count
// before taking the inner lock overwrites the owner's 3 with 1, and the
// owner's first unlock then frees the lock.)
TEST(MyReentrantLockTest, AWaiterChangesNothingUntilTheOwnersLastUnlock) {
  MyReentrantLock<std::mutex> lock;
  lock.lock();
  lock.lock();
  lock.lock();
  std::atomic<bool> asked{false}, got{false};
  std::atomic<std::int64_t> waiters_holds{-1};
  std::jthread waiter([&] {
    const bool took = lock.try_lock();
    EXPECT_FALSE(took) << "try_lock() by another thread succeeded on a lock held 3 times";
    if (took) unlock_or_fail(lock, "the waiter's unlock after its try");
    asked = true;
    lock.lock();
    got = true;
    waiters_holds = lock.hold_count();
    unlock_or_fail(lock, "the waiter's unlock");
  });
  ASSERT_TRUE(testing::eventually([&] { return asked.load(); }));
  // The waiter is now inside lock(); a bounded pause for whatever it writes
  // there to land (a correct lock writes nothing until it owns the lock).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int holds = 3; holds >= 1; --holds) {
    EXPECT_EQ(lock.hold_count(), holds) << "the owner's hold count changed while another thread waited in lock()";
    if (!unlock_or_fail(lock, "the owner's unlock")) break;
    if (holds > 1) {
      testing::eventually([&] { return got.load(); }, std::chrono::milliseconds(20));  // bounded: it must NOT get it
      EXPECT_FALSE(got.load()) << "the waiter got the lock while the owner still held it " << holds - 1 << " times";
    }
  }
  EXPECT_TRUE(testing::eventually([&] { return got.load(); })) << "the waiter never got the lock after the last unlock";
  waiter.join();
  EXPECT_EQ(waiters_holds.load(), 1) << "the new owner's hold count";
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

// An inner lock (a spin lock with yield) whose next unlock(), once armed,
// returns only after the next owner of the wrapper is in (bounded, 2 s): it
// stretches the moment just after the inner release, so that whatever the
// old owner's unlock() still does after releasing the inner lock happens
// while the new owner holds the wrapper. Deterministic: no race to win.
std::atomic<bool> stall_next_inner_unlock{false};
std::atomic<bool> next_owner_is_in{false};
class StallingUnlockLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() {
    locked_.store(false, std::memory_order_release);
    if (stall_next_inner_unlock.exchange(false)) {
      testing::eventually([] { return next_owner_is_in.load(); }, std::chrono::seconds(2));
    }
  }

 private:
  std::atomic<bool> locked_{false};
};

// The old owner's unlock() must be finished with the wrapper's state once
// the inner lock is free: a thread that takes the lock right then is the
// owner, and stays the owner after the old owner's unlock() has returned.
// (An unlock that clears the owner after releasing the inner lock erases the
// new owner: is_held_by_current_thread() turns false and its unlock throws.)
TEST(MyReentrantLockTest, TheNextOwnerStaysTheOwnerAfterThePreviousOwnersUnlockReturns) {
  MyReentrantLock<StallingUnlockLock> lock;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    next_owner_is_in = false;
    lock.lock();
    lock.lock();
    std::atomic<bool> waiting{false}, old_owner_left{false};
    bool held = false;
    std::int64_t holds = -1;
    std::jthread next([&] {
      waiting = true;
      lock.lock();
      next_owner_is_in = true;
      testing::eventually([&] { return old_owner_left.load(); });  // until the old owner's unlock() has returned
      held = lock.is_held_by_current_thread();
      holds = lock.hold_count();
      if (held) unlock_or_fail(lock, "the new owner's unlock");
    });
    ASSERT_TRUE(testing::eventually([&] { return waiting.load(); }));
    unlock_or_fail(lock, "the owner's first unlock");
    stall_next_inner_unlock = true;
    unlock_or_fail(lock, "the owner's last unlock");  // releases the inner lock, which waits for `next` to be in
    stall_next_inner_unlock = false;
    old_owner_left = true;
    next.join();
    EXPECT_FALSE(lock.is_held_by_current_thread());
    EXPECT_TRUE(held) << "the thread that took the lock during the previous owner's unlock() lost it when that "
                         "unlock() returned (is the owner cleared after the inner lock is released?)";
    EXPECT_EQ(holds, 1);
    if (!held) break;  // the wrapper is unusable now; one round is the proof
  }
}

}  // namespace
}  // namespace locklab::exercises
