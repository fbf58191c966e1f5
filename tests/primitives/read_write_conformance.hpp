// read_write_conformance.hpp — the checks every read-write lock in locklab
// is held to (ReentrantReadWriteLock, StampedLock through an adapter, and
// the standard library's and glibc's peers, which show that each check can
// fail). A lock qualifies if it has std::shared_mutex's four calls:
// lock(), unlock(), lock_shared(), unlock_shared().
//
// What it checks (each a plain function returning CheckResult)
// -------------------------------------------------------------
// - check_readers_overlap: R threads take the read lock and each stays
//   inside until it has seen all R inside at once. Proof of sharing by
//   overlap, not by timing: a lock that serialised readers never lets the
//   count reach R, and the check fails at its (generous) hang bound.
// - check_writers_exclude: writers and readers hammer the lock; a writer
//   must find nobody else inside, a reader must find no writer, and the
//   data a writer updates (two plain fields kept equal, plain on purpose so
//   that TSan reports a missing happens-before) must stay consistent; the
//   write count must equal the writes made.
// - check_writer_not_starved: a continuous read stream (readers hand a
//   baton: each holder stays until another reader has got in after it, so
//   some reader holds the lock at every instant for as long as the lock
//   admits new readers), then a writer asks for the lock. It must get in
//   within `bound` while the stream is still running. A lock that lets
//   readers overtake a waiting writer forever (glibc's default
//   PTHREAD_RWLOCK_PREFER_READER_NP, tested) fails. With `strict` (for a
//   lock with queue_length(), in fair mode) also: no read that *began*
//   after the writer was seen queued may get in before it; the number of
//   such overtaking reads is reported either way.
//
// Bounds: every wait is bounded (seconds); no check asserts speed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"
#include "tests/primitives/lock_conformance.hpp"

namespace locklab::testing {

template <class L>
concept SharedLockable = requires(L& l) {
  l.lock();
  l.unlock();
  l.lock_shared();
  l.unlock_shared();
};

template <SharedLockable L>
CheckResult check_readers_overlap(L& lock, int readers = 4, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  std::atomic<int> inside{0};
  std::atomic<int> saw_all{0};
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < readers; ++i) {
      threads.emplace_back([&] {
        lock.lock_shared();
        inside.fetch_add(1);
        if (eventually([&] { return inside.load() == readers; }, bound)) saw_all.fetch_add(1);
        lock.unlock_shared();
      });
    }
  }
  if (saw_all.load() != readers) {
    return CheckResult::fail("readers did not overlap: " + std::to_string(saw_all.load()) + " of " +
                             std::to_string(readers) + " readers ever saw all " + std::to_string(readers) +
                             " inside at once");
  }
  return CheckResult::pass();
}

struct ExclusionOptions {
  int writers = 2;
  int readers = 4;
  int iterations = 5'000;                 // per thread, at most
  std::chrono::milliseconds budget{500};  // stop early after this
};

template <SharedLockable L>
CheckResult check_writers_exclude(L& lock, const ExclusionOptions& o = {}) {
  std::atomic<int> readers_in{0};
  std::atomic<int> writers_in{0};
  std::atomic<std::int64_t> violations{0};
  std::atomic<std::int64_t> writes_made{0};
  std::atomic<bool> stop{false};
  std::int64_t a = 0;  // plain, guarded by the write lock, read under the read lock
  std::int64_t b = 0;
  std::int64_t torn = 0;  // plain, guarded by the write lock
  std::atomic<std::int64_t> torn_reads{0};
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < o.writers; ++w) {
      threads.emplace_back([&] {
        std::int64_t made = 0;
        for (int i = 0; i < o.iterations && !stop.load(std::memory_order_relaxed); ++i) {
          lock.lock();
          if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0) violations.fetch_add(1);
          if (a != b) ++torn;
          a = a + 1;
          std::atomic_signal_fence(std::memory_order_seq_cst);
          b = b + 1;
          writers_in.fetch_sub(1);
          lock.unlock();
          ++made;
        }
        writes_made.fetch_add(made);
      });
    }
    for (int r = 0; r < o.readers; ++r) {
      threads.emplace_back([&] {
        for (int i = 0; i < o.iterations && !stop.load(std::memory_order_relaxed); ++i) {
          lock.lock_shared();
          readers_in.fetch_add(1);
          if (writers_in.load() != 0) violations.fetch_add(1);
          const std::int64_t x = a;
          std::atomic_signal_fence(std::memory_order_seq_cst);
          const std::int64_t y = b;
          if (x != y) torn_reads.fetch_add(1);
          readers_in.fetch_sub(1);
          lock.unlock_shared();
        }
      });
    }
    eventually([&] { return false; }, o.budget, std::chrono::milliseconds(5));
    stop.store(true);
  }
  std::string why;
  if (violations.load() != 0) why += std::to_string(violations.load()) + " sections overlapped a write section; ";
  if (torn + torn_reads.load() != 0) why += std::to_string(torn + torn_reads.load()) + " torn reads; ";
  if (a != writes_made.load() || b != a) {
    why += "lost writes: " + std::to_string(a) + "/" + std::to_string(b) + " of " + std::to_string(writes_made.load()) + "; ";
  }
  return why.empty() ? CheckResult::pass() : CheckResult::fail("writers do not exclude: " + why);
}

struct StarvationOptions {
  int readers = 3;
  // How long a holder waits for the next reader before it lets go anyway:
  // the stream breaks only when the lock stops admitting readers for this
  // long (a lock that prefers the writer breaks it on purpose).
  std::chrono::milliseconds baton{20};
  // The writer must get in within this while the stream runs (a hang
  // bound, not a speed assertion: the documented bounds are ~1 ms).
  std::chrono::milliseconds bound{5'000};
  bool strict = false;  // fair mode: no read begun after the writer queued overtakes it
};

struct StarvationRun {
  CheckResult result;
  std::int64_t overtaking_reads = 0;  // reads begun after the writer was seen queued, in before it
  std::int64_t reads = 0;
};

template <SharedLockable L>
StarvationRun check_writer_not_starved(L& lock, const StarvationOptions& o = {}) {
  std::atomic<std::int64_t> acquisitions{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> writer_queued{false};
  std::atomic<bool> writer_in{false};      // written inside the write section
  std::atomic<bool> writer_done{false};
  std::atomic<std::int64_t> overtaking{0};
  StarvationRun run;
  {
    std::vector<std::jthread> readers;
    for (int r = 0; r < o.readers; ++r) {
      readers.emplace_back([&] {
        while (!stop.load()) {
          const bool after_writer_queued = writer_queued.load();
          lock.lock_shared();
          if (after_writer_queued && !writer_in.load()) overtaking.fetch_add(1);
          const std::int64_t mine = acquisitions.fetch_add(1) + 1;
          eventually([&] { return acquisitions.load() > mine || stop.load(); }, o.baton,
                     std::chrono::microseconds(20));
          lock.unlock_shared();
        }
      });
    }
    // Let the stream run before the writer comes.
    const bool streaming = eventually([&] { return acquisitions.load() >= 50; }, std::chrono::seconds(10));
    std::jthread writer([&] {
      lock.lock();
      writer_in.store(true);
      lock.unlock();
      writer_done.store(true);
    });
    bool queued_seen = true;
    if constexpr (HasQueueLength<L>) {
      // Counted (and, strict, asserted) only where the lock says who queued.
      queued_seen = eventually([&] { return lock.queue_length() >= 1 || writer_done.load(); }, std::chrono::seconds(10));
      writer_queued.store(true);
    }
    const bool got_in = eventually([&] { return writer_done.load(); }, o.bound);
    stop.store(true);  // ends the stream; a starved writer then gets in and the threads join
    writer.join();
    run.reads = acquisitions.load();
    run.overtaking_reads = overtaking.load();
    if (!streaming) {
      run.result = CheckResult::fail("the read stream never started (50 reads in 10 s)");
    } else if (!queued_seen) {
      run.result = CheckResult::fail("the writer was never counted in queue_length()");
    } else if (!got_in) {
      run.result = CheckResult::fail("writer starved: still waiting after " + detail::ms(o.bound) + " of a continuous read stream (" +
                                     std::to_string(run.reads) + " reads)");
    } else if (o.strict && run.overtaking_reads != 0) {
      run.result = CheckResult::fail(std::to_string(run.overtaking_reads) +
                                     " reads that began after the writer queued got in before it");
    } else {
      run.result = CheckResult::pass();
    }
  }
  return run;
}

}  // namespace locklab::testing
