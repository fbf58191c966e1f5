// my_seqlock_test.cpp — the checks of the exercise seqlock: writers exclude
// each other, a stamp that any part of a write overlapped never validates
// (deterministic interleavings first, then a writer and two readers
// hammering one MySeqLock), a reader holds nothing that a writer waits for,
// and every read that validates is whole. Run with
//   exercises/check.sh seqlock
// The grade runs them under ThreadSanitizer too: a reader whose loads of the
// words are plain races with the writer's stores in
// ReadsThatValidateAreNeverTorn, however rarely a torn read validates.
#include <my_seqlock.hpp>  // angle brackets: the build picks whose file

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <thread>

#include "primitives/cpu_relax.hpp"
#include "tests/eventually.hpp"

namespace locklab::exercises {
namespace {

using namespace std::chrono_literals;

Reading all(std::int64_t v) { return Reading{v, v, v, v}; }
bool whole(const Reading& r) { return r.a == r.b && r.b == r.c && r.c == r.d; }

// Writers take the write lock concurrently; `occupied` counts who is
// inside (a writer that finds someone there is an overlap) and `entries`, a
// plain counter, stays exact only if write_unlock() happens-before the next
// write_lock() returns (ThreadSanitizer checks that order).
TEST(MySeqLockTest, WritersMutualExclusion) {
  // 2 writers x 20000 sections: a few ms in Release, about a second under
  // ThreadSanitizer on 2 cores; a lock that lets writers overlap shows it
  // within the first thousand.
  constexpr int kWriters = 2;
  constexpr int kSections = 20'000;
  MySeqLock lock;
  std::atomic<int> occupied{0};
  std::atomic<std::int64_t> overlaps{0};
  std::int64_t entries = 0;
  {
    std::jthread writers[kWriters];
    for (auto& w : writers) {
      w = std::jthread([&] {
        for (int i = 0; i < kSections; ++i) {
          lock.write_lock();
          if (occupied.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1, std::memory_order_relaxed);
          ++entries;
          for (int p = 0; p < 16; ++p) cpu_relax();  // long enough for an overlapping writer to show
          occupied.fetch_sub(1, std::memory_order_relaxed);
          lock.write_unlock();
        }
      });
    }
  }
  EXPECT_EQ(overlaps.load(), 0) << "two writers were inside write_lock() at once";
  EXPECT_EQ(entries, std::int64_t{kWriters} * kSections) << "writes under the write lock were lost";
}

// try_write_lock() on a held lock returns false, from another thread, without
// waiting; on a free lock it takes it.
TEST(MySeqLockTest, TryLockDoesNotBlockAndFailsWhileAWriterHolds) {
  MySeqLock lock;
  lock.write_lock();
  auto tried = std::async(std::launch::async, [&] { return lock.try_write_lock(); });
  if (tried.wait_for(10s) != std::future_status::ready) {
    lock.write_unlock();  // let it finish (never leave a thread stuck)
    tried.wait();
    FAIL() << "try_write_lock() waited for the holder";
  }
  EXPECT_FALSE(tried.get()) << "try_write_lock() took the write lock while another writer held it";
  lock.write_unlock();
  ASSERT_TRUE(lock.try_write_lock()) << "try_write_lock() failed on a free lock";
  lock.write_unlock();
}

TEST(MySeqLockTest, AReadAloneReadsWhatWasWrittenAndValidates) {
  MySeqLock lock;
  lock.write(Reading{1, 2, 3, 4});
  const MySeqLock& reader = lock;  // readers are const: they write nothing
  const std::uint64_t s = reader.read_begin();
  EXPECT_EQ(reader.load(), (Reading{1, 2, 3, 4})) << "load() did not return what write() stored";
  EXPECT_TRUE(reader.validate(s)) << "a read that no write overlapped did not validate";
  EXPECT_EQ(reader.read(), (Reading{1, 2, 3, 4}));
  lock.write(Reading{5, 6, 7, 8});
  EXPECT_EQ(reader.read(), (Reading{5, 6, 7, 8})) << "read() did not return the last write";
}

// The interleavings a seqlock exists for, one at a time: a stamp taken while
// a writer holds the lock, and a stamp taken before a write that began (or
// began and ended) before validate(). None may validate, ever.
TEST(MySeqLockTest, AReadThatAWriteOverlappedNeverValidates) {
  MySeqLock lock;
  const MySeqLock& reader = lock;
  {
    SCOPED_TRACE("the stamp was taken while a writer held the lock");
    lock.write_lock();
    const std::uint64_t s = reader.read_begin();
    lock.store(all(1));
    EXPECT_FALSE(reader.validate(s)) << "validated while the write was still going on";
    lock.write_unlock();
    EXPECT_FALSE(reader.validate(s)) << "validated after the write it overlapped";
  }
  {
    SCOPED_TRACE("a write_lock() came between read_begin() and validate()");
    const std::uint64_t s = reader.read_begin();
    static_cast<void>(reader.load());
    lock.write_lock();
    EXPECT_FALSE(reader.validate(s)) << "validated while a writer held the lock (it may have stored half its words)";
    lock.store(all(2));
    lock.write_unlock();
    EXPECT_FALSE(reader.validate(s)) << "validated after a whole write came in between";
  }
  {
    SCOPED_TRACE("a whole write() came between read_begin() and validate()");
    const std::uint64_t s = reader.read_begin();
    lock.write(all(3));
    EXPECT_FALSE(reader.validate(s));
  }
  const std::uint64_t s = reader.read_begin();
  EXPECT_EQ(reader.load(), all(3));
  EXPECT_TRUE(reader.validate(s)) << "a fresh read did not validate";
}

// A reader between read_begin() and validate() holds nothing: a writer on
// another thread gets the lock and finishes its write meanwhile, and the
// reader's stamp then fails. (A "seqlock" whose readers take a shared lock
// would make this writer wait: that is a read-write lock, not a seqlock.)
TEST(MySeqLockTest, ReadersNeverBlockWriters) {
  MySeqLock lock;
  lock.write(all(1));
  const MySeqLock& reader = lock;
  const std::uint64_t s = reader.read_begin();
  const Reading seen = reader.load();
  auto writer = std::async(std::launch::async, [&] { lock.write(all(2)); });
  const bool finished = writer.wait_for(10s) == std::future_status::ready;
  const bool validated = reader.validate(s);  // ends the read: a blocked writer gets in now
  writer.wait();
  EXPECT_TRUE(finished) << "write() waited for a reader that had called read_begin() and load()";
  EXPECT_EQ(seen, all(1));
  EXPECT_FALSE(validated) << "the read validated although a whole write came in between";
  EXPECT_EQ(reader.read(), all(2));
}

// One writer stores {v, v, v, v} for v = 1, 2, ... while two readers read:
// one by hand (read_begin, load, validate: every read that validates must be
// whole, and the torn ones it rejects are counted), one with read(). Each
// reader's validated values never go backwards (the sequence orders them).
// The writer goes on until it has written kWrites times and each reader has
// finished kReads reads (or kBound has passed), so that reads and writes
// overlap thousands of times even where one side is much faster.
TEST(MySeqLockTest, ReadsThatValidateAreNeverTorn) {
  // ~10 ms in Release, ~1-2 s under ThreadSanitizer on 2 cores.
  constexpr std::int64_t kWrites = 20'000;
  constexpr std::int64_t kReads = 20'000;
  constexpr auto kBound = 20s;  // a hang detector only
  MySeqLock lock;
  const MySeqLock& reader = lock;
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> validated_torn{0}, validated{0}, backwards{0}, read_torn{0}, last_written{0};
  std::atomic<std::int64_t> by_hand_reads{0}, read_reads{0};
  std::int64_t rejected = 0;  // the hand reader's only
  {
    std::jthread writer([&] {
      const auto deadline = std::chrono::steady_clock::now() + kBound;
      std::int64_t v = 0;
      while (v < kWrites || ((by_hand_reads.load(std::memory_order_relaxed) < kReads ||
                              read_reads.load(std::memory_order_relaxed) < kReads) &&
                             std::chrono::steady_clock::now() < deadline)) {
        lock.write(all(++v));
      }
      last_written.store(v, std::memory_order_relaxed);
      done.store(true, std::memory_order_release);
    });
    std::jthread by_hand([&] {
      std::int64_t last = 0;
      while (!done.load(std::memory_order_acquire)) {
        by_hand_reads.fetch_add(1, std::memory_order_relaxed);
        const std::uint64_t s = reader.read_begin();
        const Reading r = reader.load();
        if (!reader.validate(s)) {
          ++rejected;
          continue;
        }
        validated.fetch_add(1, std::memory_order_relaxed);
        if (!whole(r)) validated_torn.fetch_add(1, std::memory_order_relaxed);
        if (r.a < last) backwards.fetch_add(1, std::memory_order_relaxed);
        last = r.a;
      }
    });
    std::jthread with_read([&] {
      std::int64_t last = 0;
      while (!done.load(std::memory_order_acquire)) {
        read_reads.fetch_add(1, std::memory_order_relaxed);
        const Reading r = reader.read();
        if (!whole(r)) read_torn.fetch_add(1, std::memory_order_relaxed);
        if (r.a < last) backwards.fetch_add(1, std::memory_order_relaxed);
        last = r.a;
      }
    });
  }
  EXPECT_EQ(validated_torn.load(), 0) << "a torn read validated (of " << validated.load() << " validated reads)";
  EXPECT_EQ(read_torn.load(), 0) << "read() returned a torn Reading";
  EXPECT_EQ(backwards.load(), 0) << "a validated read saw an older write than the reader's previous one";
  EXPECT_EQ(reader.read(), all(last_written.load())) << "after the writer finished, read() did not return its last write";
  RecordProperty("rejected_reads", static_cast<int>(rejected));
  RecordProperty("validated_reads", static_cast<int>(validated.load()));
}

}  // namespace
}  // namespace locklab::exercises
