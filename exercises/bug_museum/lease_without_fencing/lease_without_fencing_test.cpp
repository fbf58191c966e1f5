// lease_without_fencing_test.cpp — EXHIBIT lease_without_fencing: a client
// whose lease expired during a pause writes anyway; the test expects no
// update to be lost, so on the exhibit it fails with "BUG SHOWN": another
// client's deposit is gone. Deterministic: the clock moves only when the
// test says so. Not graded against a fix (graded.hpp): the fix changes the
// interface (the storage must see a token with every write), so this client
// code changes with it; the reference's test is in the instructor folder.
// See README.md.
#include <gtest/gtest.h>

#include <cstdio>

#include "exercises/bug_museum/lease_without_fencing/lease_lock.hpp"

namespace locklab::museum {
namespace {

TEST(MuseumLeaseWithoutFencing, NoUpdateIsLostWhenAClientIsPausedPastItsLease) {
  ManualClock clock;
  LeaseLock lock(clock, /*lease_ms=*/10'000);
  Account account(100);

  // Client A: withdraw 30. Acquire, read, and check the lease before writing.
  ASSERT_TRUE(lock.try_acquire("A"));
  const std::int64_t a_read = account.read();  // 100
  ASSERT_TRUE(lock.holds("A")) << "A checks its lease right before writing...";
  clock.advance(15'000);  // ...and is paused right after the check (GC, swap): 15 s

  // Meanwhile client B: deposit 50. A's lease has expired, so B gets the lock.
  ASSERT_TRUE(lock.try_acquire("B")) << "a lease that expired must be grantable, or a crashed holder blocks forever";
  account.write(account.read() + 50);  // 150
  lock.release("B");

  // A resumes where it was: after its check, before its write.
  account.write(a_read - 30);  // 70, from a balance of 100 that no longer exists
  lock.release("A");

  const std::int64_t expected = 100 - 30 + 50;
  EXPECT_EQ(account.read(), expected) << "BUG SHOWN: balance " << account.read()
                                      << " after -30 and +50 on 100: A's stale write overwrote B's deposit";
  std::printf("observed: balance %lld after -30 and +50 on 100 (expected %lld): B's deposit is lost\n",
              static_cast<long long>(account.read()), static_cast<long long>(expected));
}

}  // namespace
}  // namespace locklab::museum
