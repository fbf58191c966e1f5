#include "primitives/stamped_lock.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"
#include "tests/primitives/read_write_conformance.hpp"

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Stamp = StampedLock::Stamp;
using locklab::testing::eventually;

::testing::AssertionResult throws_not_permitted(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::operation_not_permitted) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "wrong code: " << e.code().message();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something other than std::system_error";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The read-write checks through std::shared_mutex's names. A stamp per
// thread: each reading thread of the checks holds one read at a time.
class StampedAsShared {
 public:
  void lock() { write_ = lock_.write_lock(); }
  bool try_lock() { return keep(lock_.try_write_lock()); }
  bool try_lock_for(std::chrono::steady_clock::duration d) { return keep(lock_.try_write_lock_for(d)); }
  bool try_lock_until(std::chrono::steady_clock::time_point t) { return keep(lock_.try_write_lock_until(t)); }
  void unlock() { lock_.unlock_write(write_); }
  void lock_shared() { read_stamp() = lock_.read_lock(); }
  void unlock_shared() { lock_.unlock_read(read_stamp()); }
  std::int64_t queue_length() const { return lock_.queue_length(); }
  LockStatsSnapshot stats() const { return lock_.stats(); }

 private:
  bool keep(Stamp s) {
    if (s != 0) write_ = s;
    return s != 0;
  }
  static Stamp& read_stamp() {
    thread_local Stamp s = 0;
    return s;
  }
  StampedLock lock_;
  Stamp write_ = 0;  // written and read only by the write holder
};

}  // namespace

// The write side through the lock suite (unfair: no FIFO promised).
using StampedWriteSide = ::testing::Types<StampedAsShared>;
INSTANTIATE_TYPED_TEST_SUITE_P(StampedLockWriteSide, LockConformance, StampedWriteSide);

namespace {

TEST(StampedLock, ReadersRunConcurrently) {
  StampedAsShared l;
  const auto r = testing::check_readers_overlap(l, 4);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(StampedLock, WritersExcludeEveryone) {
  StampedAsShared l;
  const auto r = testing::check_writers_exclude(l);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(StampedLock, WriterGetsInUnderAContinuousReadStream) {
  StampedAsShared l;
  const auto run = testing::check_writer_not_starved(l);
  EXPECT_TRUE(run.result.ok) << run.result.message;
  ::testing::Test::RecordProperty("overtaking_reads", std::to_string(run.overtaking_reads));
}

TEST(StampedLock, StampsAndModes) {
  StampedLock l;
  const Stamp o = l.try_optimistic_read();
  ASSERT_NE(o, 0u);
  EXPECT_TRUE(StampedLock::is_optimistic_stamp(o));
  EXPECT_TRUE(l.validate(o));
  const Stamp r1 = l.read_lock();
  const Stamp r2 = l.try_read_lock();
  ASSERT_NE(r2, 0u);
  EXPECT_TRUE(StampedLock::is_read_stamp(r1));
  EXPECT_EQ(l.read_lock_count(), 2);
  EXPECT_TRUE(l.validate(r1)) << "a held read stamp validates";
  EXPECT_TRUE(l.validate(o)) << "readers do not invalidate optimistic reads";
  EXPECT_EQ(l.try_write_lock(), 0u);
  l.unlock_read(r1);
  l.unlock(r2);
  EXPECT_FALSE(l.is_read_locked());

  const Stamp w = l.write_lock();
  EXPECT_TRUE(StampedLock::is_write_stamp(w));
  EXPECT_TRUE(l.is_write_locked());
  EXPECT_TRUE(l.validate(w)) << "a held write stamp validates";
  EXPECT_FALSE(l.validate(o)) << "an optimistic stamp from before a write";
  EXPECT_EQ(l.try_optimistic_read(), 0u) << "no optimistic read while written";
  EXPECT_EQ(l.try_read_lock(), 0u);
  l.unlock_write(w);
  EXPECT_FALSE(l.validate(w)) << "a released write stamp";
  EXPECT_FALSE(l.validate(0));
  EXPECT_NE(l.try_optimistic_read(), o) << "a new version after a write";
}

TEST(StampedLock, OptimisticReadThatRacedAWriteFailsValidateDeterministically) {
  StampedLock l;
  // A write that began and ended inside the read.
  Stamp s = l.try_optimistic_read();
  std::thread([&] { l.unlock_write(l.write_lock()); }).join();
  EXPECT_FALSE(l.validate(s));
  // A write that began inside the read and is still going on.
  s = l.try_optimistic_read();
  std::atomic<bool> in{false};
  std::atomic<bool> go{false};
  std::jthread writer([&] {
    const Stamp w = l.write_lock();
    in.store(true);
    eventually([&] { return go.load(); });
    l.unlock_write(w);
  });
  ASSERT_TRUE(eventually([&] { return in.load(); }));
  EXPECT_FALSE(l.validate(s));
  go.store(true);
  writer.join();
  EXPECT_FALSE(l.validate(s));
}

// Four fields a writer keeps equal. Readers read them optimistically with
// std::atomic_ref (the essay's rule 1), the writer writes them with
// std::atomic_ref under the write lock; a read that validates must see
// them equal. Plain loads here would be a data race that TSan reports.
TEST(StampedLock, ValidatedOptimisticReadsAreNeverTorn) {
  StampedLock l;
  alignas(64) std::array<std::int64_t, 4> fields{};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> validated{0};
  std::atomic<std::int64_t> rejected{0};
  std::atomic<std::int64_t> torn_but_validated{0};
  std::atomic<std::int64_t> writes{0};
  {
    std::vector<std::jthread> threads;
    threads.emplace_back([&] {
      std::int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const Stamp w = l.write_lock();
        ++n;
        for (auto& f : fields) std::atomic_ref<std::int64_t>(f).store(n, std::memory_order_relaxed);
        l.unlock_write(w);
      }
      writes.store(n);
    });
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          const Stamp s = l.try_optimistic_read();
          if (s == 0) continue;
          std::array<std::int64_t, 4> seen;
          for (std::size_t i = 0; i < seen.size(); ++i) {
            seen[i] = std::atomic_ref<std::int64_t>(fields[i]).load(std::memory_order_relaxed);
          }
          if (!l.validate(s)) {
            rejected.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          validated.fetch_add(1, std::memory_order_relaxed);
          for (auto x : seen) {
            if (x != seen[0]) {
              torn_but_validated.fetch_add(1, std::memory_order_relaxed);
              break;
            }
          }
        }
      });
    }
    std::this_thread::sleep_for(300ms);
    stop.store(true);
  }
  EXPECT_EQ(torn_but_validated.load(), 0) << "a read that overlapped a write validated";
  EXPECT_GT(validated.load(), 0) << "no optimistic read ever validated";
  EXPECT_GT(writes.load(), 0);
  ::testing::Test::RecordProperty("validated", std::to_string(validated.load()));
  ::testing::Test::RecordProperty("rejected", std::to_string(rejected.load()));
}

TEST(StampedLock, AWrongStampIsRefusedAndChangesNothing) {
  StampedLock l;
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock(0); }));
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock(l.try_optimistic_read()); }));
  const Stamp r = l.read_lock();
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_write(r); })) << "a read stamp to unlock_write";
  EXPECT_EQ(l.read_lock_count(), 1);
  l.unlock_read(r);
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_read(r); })) << "a read unlock with no read held";
  EXPECT_EQ(l.read_lock_count(), 0);

  const Stamp w = l.write_lock();
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_read(w); })) << "a write stamp to unlock_read";
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_read(r); })) << "a stale read stamp while written";
  EXPECT_TRUE(l.is_write_locked());
  l.unlock_write(w);
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_write(w); })) << "a second unlock of one write stamp";
  const Stamp w2 = l.write_lock();
  EXPECT_TRUE(throws_not_permitted([&] { l.unlock_write(w); })) << "a stale write stamp while another is held";
  EXPECT_TRUE(l.is_write_locked());
  l.unlock(w2);
  EXPECT_FALSE(l.is_write_locked());
  EXPECT_NE(l.try_write_lock(), 0u) << "the lock still works";
}

TEST(StampedLock, ConcurrentUnlocksOfOneWriteStampReleaseOnce) {
  for (int round = 0; round < 50; ++round) {
    StampedLock l;
    const Stamp w = l.write_lock();
    std::atomic<int> ok{0};
    std::atomic<int> refused{0};
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&] {
          try {
            l.unlock_write(w);
            ok.fetch_add(1);
          } catch (const std::system_error&) {
            refused.fetch_add(1);
          }
        });
      }
    }
    ASSERT_EQ(ok.load(), 1);
    ASSERT_EQ(refused.load(), 1);
    ASSERT_EQ(l.read_lock_count(), 0);
    ASSERT_NE(l.try_write_lock(), 0u) << "permits were released twice or not at all";
  }
}

TEST(StampedLock, TryConvertToWriteLock) {
  StampedLock l;
  // Optimistic, valid, free: becomes the write lock.
  Stamp s = l.try_optimistic_read();
  Stamp w = l.try_convert_to_write_lock(s);
  ASSERT_NE(w, 0u);
  EXPECT_TRUE(StampedLock::is_write_stamp(w));
  EXPECT_EQ(l.try_convert_to_write_lock(w), w) << "a held write stamp converts to itself";
  l.unlock_write(w);
  EXPECT_EQ(l.try_convert_to_write_lock(w), 0u) << "a released write stamp";
  // Optimistic after a write: refused.
  s = l.try_optimistic_read();
  l.unlock_write(l.write_lock());
  EXPECT_EQ(l.try_convert_to_write_lock(s), 0u);
  EXPECT_FALSE(l.is_write_locked());
  // Optimistic while another thread reads: refused, nothing held.
  s = l.try_optimistic_read();
  const Stamp other = l.read_lock();
  EXPECT_EQ(l.try_convert_to_write_lock(s), 0u);
  // A read stamp with a second reader: refused, the read still held.
  const Stamp mine = l.read_lock();
  EXPECT_EQ(l.try_convert_to_write_lock(mine), 0u);
  EXPECT_EQ(l.read_lock_count(), 2);
  l.unlock_read(other);
  // The only reader: the read becomes the write lock.
  w = l.try_convert_to_write_lock(mine);
  ASSERT_NE(w, 0u);
  EXPECT_TRUE(l.is_write_locked());
  EXPECT_EQ(l.read_lock_count(), 0);
  EXPECT_EQ(l.try_read_lock(), 0u);
  l.unlock_write(w);
  EXPECT_NE(l.try_write_lock(), 0u) << "every permit came back";
}

TEST(StampedLock, TimedTries) {
  StampedLock l;
  const Stamp r = l.read_lock();
  std::jthread([&] {
    const auto t0 = Clock::now();
    EXPECT_EQ(l.try_write_lock_for(30ms), 0u);
    EXPECT_GE(Clock::now() - t0, 30ms);
    EXPECT_EQ(l.try_write_lock_for(0ms), 0u);
    EXPECT_EQ(l.try_write_lock_until(Clock::now() - 1s), 0u);
  });
  l.unlock_read(r);
  const Stamp w = l.write_lock();
  std::jthread([&] {
    const auto t0 = Clock::now();
    EXPECT_EQ(l.try_read_lock_for(30ms), 0u);
    EXPECT_GE(Clock::now() - t0, 30ms);
    EXPECT_EQ(l.try_read_lock_until(Clock::now() + 1ms), 0u);
  });
  std::atomic<Stamp> got{0};
  std::jthread waiter([&] {
    got.store(l.try_read_lock_for(10s));
    if (got.load() != 0) l.unlock_read(got.load());
  });
  std::this_thread::sleep_for(5ms);
  l.unlock_write(w);
  waiter.join();
  EXPECT_NE(got.load(), 0u);
}

}  // namespace
}  // namespace locklab
