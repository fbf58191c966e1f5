// ReadWriteLock's own outcomes (read_write_lock.hpp); the shared fault and
// exclusion suites run both sides in redis_lock_outcomes_test.cpp.
#include "distributed/read_write_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using ReadWriteLockTest = RedisTest;

ReadWriteLock::Options leased(std::chrono::milliseconds lease) {
  ReadWriteLock::Options o;
  o.lease = lease;
  return o;
}

// Holders of the read side inside their section at once: each reader
// counts itself in and stays until `want` readers are in (or a bound of
// 5 s runs out), so the highest count seen proves overlap without timing.
struct Overlap {
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  void enter_and_wait_for(int want) {
    const int now = ++inside;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    (void)eventually([&] { return inside.load() >= want; }, 5s);
  }
};

TEST_F(ReadWriteLockTest, ReadersHoldTheLockAtTheSameTime) {
  ReadWriteLock rw(client(), key(), leased(10s));
  Overlap overlap;
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      ASSERT_TRUE(rw.read_lock().try_lock_for(5s));
      overlap.enter_and_wait_for(4);
      rw.read_lock().unlock();
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(overlap.most.load(), 4) << "readers did not hold the read lock together";
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0) << "the last reader left the lock behind";
}

TEST_F(ReadWriteLockTest, AWriterExcludesReadersAndItsReleaseWakesThem) {
  // The writer's 30 s lease and the readers' 20 s wait are far beyond the
  // 5 s bound below: only the release message (one permit) and the pokes
  // among readers can let all three in together within it.
  ReadWriteLock rw(client(), key(), leased(30s));
  rw.write_lock().lock();
  Overlap overlap;
  std::atomic<int> refused{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      if (!rw.read_lock().try_lock()) ++refused;
      ASSERT_TRUE(rw.read_lock().try_lock_for(20s));
      overlap.enter_and_wait_for(3);
      rw.read_lock().unlock();
    });
  }
  ASSERT_TRUE(eventually([&] { return refused.load() == 3; }, 5s));
  EXPECT_EQ(overlap.inside.load(), 0) << "a reader got in under the writer";
  std::this_thread::sleep_for(50ms);  // let them park (the test holds either way)
  rw.write_lock().unlock();
  EXPECT_TRUE(eventually([&] { return overlap.most.load() == 3; }, 5s))
      << "the parked readers were not all let in together";
  for (auto& t : readers) t.join();
}

TEST_F(ReadWriteLockTest, AWriterWaitsForEveryReader) {
  ReadWriteLock rw(client(), key(), leased(10s));
  rw.read_lock().lock();
  std::thread([&] {
    EXPECT_FALSE(rw.write_lock().try_lock_for(100ms));
    EXPECT_TRUE(rw.read_lock().try_lock());  // readers still share meanwhile
    rw.read_lock().unlock();
  }).join();
  std::atomic<bool> writing{false};
  std::thread writer([&] {
    ASSERT_TRUE(rw.write_lock().try_lock_for(5s));
    writing = true;
    rw.write_lock().unlock();
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(writing.load());
  rw.read_lock().unlock();
  writer.join();
  EXPECT_TRUE(writing.load());
}

TEST_F(ReadWriteLockTest, TheLeaseOfEachReaderEndsOnItsOwn) {
  // A reader that never unlocks (a crashed process): its own lease ends,
  // even while another reader keeps renewing its hold.
  ReadLock dead(client(), key(), leased(200ms));
  ReadWriteLock::Options watched;
  watched.watchdog_lease = 150ms;  // renewed every 50 ms while held
  ReadLock alive(client(), key(), watched);
  dead.lock();
  std::thread([&] { alive.lock(); }).join();  // held by a thread that ends: its hold stays, renewed
  WriteLock writer(client(), key(), leased(10s));
  std::thread([&] { EXPECT_FALSE(writer.try_lock_for(400ms)) << "the renewed reader was overrun"; }).join();
  EXPECT_GT(alive.watchdog_renewals(), 0u);
  EXPECT_EQ(client().command({"ZCARD", derived_key(key(), "readers")}).as_integer(), 1)
      << "the dead reader's hold was not dropped at its lease end";
  try {
    dead.unlock();
    FAIL() << "unlock after the lease ended returned normally";
  } catch (const LockLost& e) {
    EXPECT_TRUE(e.taken_by_other());  // the renewed reader still holds it
  }
}

TEST_F(ReadWriteLockTest, AWriterParkedBehindAReaderGetsTheLockWhenTheReadersLeaseEnds) {
  ReadLock dead(client(), key(), leased(200ms));
  dead.lock();  // never unlocked
  WriteLock writer(client(), key(), leased(10s));
  std::thread([&] {
    EXPECT_TRUE(writer.try_lock_for(5s)) << "the writer waited past the dead reader's lease";
    writer.unlock();
  }).join();
  // Bounded by the reader's lease end, not polling: a handful of attempts.
  EXPECT_LT(writer.attempts(), 10u);
  EXPECT_THROW(dead.unlock(), LockLost);
}

TEST_F(ReadWriteLockTest, AWriterDowngradesToAReadHoldWithoutAGap) {
  ReadWriteLock rw(client(), key(), leased(10s));
  rw.write_lock().lock();
  rw.read_lock().lock();  // allowed: the writer takes the read side
  rw.write_lock().unlock();
  EXPECT_EQ(rw.read_lock().hold_count(), 1);
  std::thread([&] {
    EXPECT_FALSE(rw.write_lock().try_lock()) << "a writer got in after the downgrade";
    EXPECT_TRUE(rw.read_lock().try_lock()) << "readers cannot share the downgraded lock";
    rw.read_lock().unlock();
  }).join();
  rw.read_lock().unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  std::thread([&] {
    EXPECT_TRUE(rw.write_lock().try_lock());
    rw.write_lock().unlock();
  }).join();
}

TEST_F(ReadWriteLockTest, AnUpgradeIsRefusedAsResourceDeadlockWouldOccurAndChangesNothing) {
  ReadWriteLock rw(client(), key(), leased(10s));
  rw.read_lock().lock();
  for (int i = 0; i < 2; ++i) {
    try {
      if (i == 0) {
        (void)rw.write_lock().try_lock();
      } else {
        rw.write_lock().lock();  // would wait for itself for ever
      }
      FAIL() << "an upgrade was granted";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
      EXPECT_NE(std::string(e.what()).find("upgrade"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(rw.write_lock().is_held_by_current_thread());
  EXPECT_EQ(rw.read_lock().hold_count(), 1);
  EXPECT_EQ(client().command({"HGET", key(), "mode"}).as_string(), "read");
  rw.read_lock().unlock();
  EXPECT_TRUE(rw.write_lock().try_lock());  // no read hold: an ordinary acquisition
  rw.write_lock().unlock();
}

TEST_F(ReadWriteLockTest, BothSidesAreReentrant) {
  ReadWriteLock rw(client(), key(), leased(10s));
  rw.write_lock().lock();
  rw.write_lock().lock();
  EXPECT_EQ(rw.write_lock().hold_count(), 2);
  rw.write_lock().unlock();
  std::thread([&] { EXPECT_FALSE(rw.read_lock().try_lock()); }).join();
  rw.write_lock().unlock();
  rw.read_lock().lock();
  rw.read_lock().lock();
  rw.read_lock().unlock();
  std::thread([&] { EXPECT_FALSE(rw.write_lock().try_lock()); }).join();
  rw.read_lock().unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(ReadWriteLockTest, UnlockByANonHolderIsOperationNotPermittedAndSendsNothing) {
  ReadWriteLock rw(client(), key(), leased(10s));
  rw.read_lock().lock();
  const auto before = client().round_trips();
  expect_not_permitted([&] { rw.write_lock().unlock(); }, "a reader unlocked the write side");
  std::thread([&] { expect_not_permitted([&] { rw.read_lock().unlock(); }, "another thread unlocked a read hold"); })
      .join();
  EXPECT_EQ(client().round_trips(), before);
  rw.read_lock().unlock();
}

TEST_F(ReadWriteLockTest, UncontendedLockAndUnlockAreTwoRoundTripsPerSide) {
  ReadWriteLock rw(client(), key(), leased(10s));
  for (int side = 0; side < 2; ++side) {
    auto run = [&] {
      if (side == 0) {
        rw.read_lock().lock();
        rw.read_lock().unlock();
      } else {
        rw.write_lock().lock();
        rw.write_lock().unlock();
      }
    };
    run();  // loads the scripts
    const auto before = client().round_trips();
    run();
    EXPECT_EQ(client().round_trips() - before, 2u) << "side " << side;
  }
}

TEST_F(ReadWriteLockTest, TheWatchdogRenewsBothSidesWhileHeld) {
  ReadWriteLock::Options o;
  o.watchdog_lease = 90ms;  // renewed every 30 ms
  ReadWriteLock rw(client(), key(), o);
  rw.write_lock().lock();
  rw.read_lock().lock();
  std::this_thread::sleep_for(300ms);  // three leases
  EXPECT_GT(rw.write_lock().watchdog_renewals(), 0u);
  EXPECT_GT(rw.read_lock().watchdog_renewals(), 0u);
  EXPECT_NO_THROW(rw.write_lock().unlock());
  EXPECT_NO_THROW(rw.read_lock().unlock());
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(ReadWriteLockTest, BadOptionsAndNamesAreInvalidArgumentAndSendNothing) {
  const auto before = client().round_trips();
  EXPECT_THROW(ReadLock(client(), key(), leased(-1ms)), std::invalid_argument);
  EXPECT_THROW(WriteLock(client(), key(), leased(std::chrono::milliseconds(std::chrono::years(1000)))),
               std::invalid_argument);
  ReadWriteLock::Options tiny;
  tiny.watchdog_lease = 2ms;
  EXPECT_THROW(ReadWriteLock(client(), key(), tiny), std::invalid_argument);
  EXPECT_THROW(ReadWriteLock(client(), "a~b"), std::invalid_argument);
  EXPECT_THROW(ReadWriteLock(client(), ""), std::invalid_argument);
  EXPECT_EQ(client().round_trips(), before);
}

TEST_F(ReadWriteLockTest, TheLongestLeaseIsALeaseLikeAnyOther) {
  ReadWriteLock rw(client(), key(), leased(detail::kMaxDuration));  // the keys' TTL goes to twice this
  rw.write_lock().lock();
  rw.read_lock().lock();
  EXPECT_GT(client().command({"PTTL", key()}).as_integer(), detail::kMaxDuration.count());
  rw.write_lock().unlock();
  rw.read_lock().unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
}

TEST_F(ReadWriteLockTest, EveryKeyAndChannelOfALockSharesItsHashTag) {
  ReadWriteLock rw(client(), "{user1}:doc", leased(10s));
  rw.read_lock().lock();
  EXPECT_EQ(client().command({"EXISTS", "{user1}:doc~readers"}).as_integer(), 1);
  EXPECT_EQ(rw.read_lock().channel(), "{user1}:doc~read_channel");
  EXPECT_EQ(rw.write_lock().channel(), "{user1}:doc~write_channel");
  rw.read_lock().unlock();
  EXPECT_EQ(client().command({"EXISTS", "{user1}:doc~readers"}).as_integer(), 0);
}

}  // namespace
}  // namespace locklab::redis::testing
