// read_write_peers.hpp — the read-write locks of the `rwlocks` suite that
// need an adapter to be driven by run_read_write_contention
// (benches/harness/read_write.hpp): glibc's pthread_rwlock in its two
// policies, StampedLock read pessimistically and optimistically, a plain
// mutex for both sides, no lock at all, and the library read-write locks
// other people ship: abseil's Mutex in its reader mode, oneTBB's
// spin_rw_mutex and queuing_rw_mutex. std::shared_mutex and
// ReentrantReadWriteLock need none (they have lock_shared()).
//
// The library peers and their algorithms
// --------------------------------------
// - AbslReaderWriterMutex ("absl.Mutex(no-detect)"): absl::Mutex's
//   ReaderLock/WriterLock. One word: a reader count in its high bits plus
//   the writer and waiter bits; ReaderLock is one compare-exchange adding a
//   reader when neither a writer holds nor a writer waits (absl's mutex is
//   writer-preferring once a writer has queued), else the same spin-then-
//   enqueue path as Lock(). Measured with the deadlock detector off for the
//   adapter's lifetime (local_peers.hpp, "Measuring absl both ways"): Debian
//   ships the library without NDEBUG, and the detector takes one
//   process-wide spin lock in every ReaderLock and ReaderUnlock too, which
//   the `locks` suite's "absl.Mutex" already shows; here the question is
//   the read-write algorithm, so only the detector-off peer runs.
// - TbbSpinRwMutex ("tbb.spin_rw_mutex"): oneTBB's spin_rw_mutex, one word:
//   WRITER bit, WRITER_PENDING bit, reader count above them. lock_shared()
//   is a fetch_add of one reader when neither bit is set (undone with a
//   fetch_sub when a writer raced in), unlock_shared() one fetch_sub; a
//   waiting writer sets WRITER_PENDING, which stops new readers. Waiters
//   spin with TBB's atomic_backoff (pause 1, 2, 4 .. 16, then yield). No
//   queue, no parking.
// - TbbQueuingRwMutex ("tbb.queuing_rw_mutex"): oneTBB's queuing_rw_mutex,
//   an MCS-style FIFO queue of readers and writers (Krieger, Stumm, Unrau
//   and Hanna's fair reader-writer queue lock): every acquire, read or
//   write, swaps its node into the tail; consecutive readers enter
//   together; each waiter spins on its own node. Fair, local spinning, but
//   every reader writes the shared tail, so reads pay at least one
//   exchange on a shared line and one more on release. Its queue node (the
//   scoped_lock) lives in the caller's per-thread slot, as for
//   TbbQueuingMutex (local_peers.hpp, "Per-thread queue nodes").
// The libraries' own synchronisation is invisible to ThreadSanitizer (code
// in an uninstrumented shared library), so the absl and queuing adapters
// tell it about every acquire and release, as local_peers.hpp does; on the
// read side this also orders readers among themselves, which can only hide
// races between two readers, and readers only read.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>

#include <absl/synchronization/mutex.h>
#include <oneapi/tbb/queuing_rw_mutex.h>
#include <oneapi/tbb/spin_rw_mutex.h>

#include "benches/local_peers.hpp"
#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/stamped_lock.hpp"

namespace locklab::bench::peers {

// glibc's read-write lock with an explicit policy:
//   PTHREAD_RWLOCK_PREFER_READER_NP (glibc's default, and std::shared_mutex's
//   on glibc): a reader gets in whenever no writer holds the lock, so a
//   continuous read stream starves writers (tests/primitives/
//   reentrant_read_write_lock_test.cpp shows it);
//   PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: a waiting writer stops
//   new readers (and a thread may not re-take a read it holds while a
//   writer waits: it would deadlock, hence "nonrecursive").
class alignas(kCacheLineSize) PthreadRwlock {
 public:
  explicit PthreadRwlock(int kind) {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, kind);
    const int rc = pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("pthread_rwlock_init failed");
  }
  ~PthreadRwlock() { pthread_rwlock_destroy(&lock_); }
  PthreadRwlock(const PthreadRwlock&) = delete;
  PthreadRwlock& operator=(const PthreadRwlock&) = delete;
  void lock() { pthread_rwlock_wrlock(&lock_); }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

// StampedLock, reads through read_lock() (pessimistic). A waiter holds one
// read at a time, so its stamp can live in a thread_local.
class StampedPessimistic {
 public:
  void lock() { write_ = lock_.write_lock(); }
  void unlock() { lock_.unlock_write(write_); }
  void lock_shared() { read_stamp() = lock_.read_lock(); }
  void unlock_shared() { lock_.unlock_read(read_stamp()); }
  LockStatsSnapshot stats() const noexcept { return lock_.stats(); }

 private:
  static StampedLock::Stamp& read_stamp() {
    thread_local StampedLock::Stamp s = 0;
    return s;
  }
  StampedLock lock_;
  StampedLock::Stamp write_ = 0;  // only the write holder touches it
};

// StampedLock, reads optimistic first: Java's idiom, one optimistic try
// and, if it does not validate, the read lock. Returns the failed tries
// (0 or 1). The section is the harness's busy work, which reads no shared
// data, so the essay's rule on atomic data loads has nothing to apply to.
class StampedOptimistic {
 public:
  void lock() { write_ = lock_.write_lock(); }
  void unlock() { lock_.unlock_write(write_); }
  template <class F>
  std::int64_t read_optimistically(F&& section) {
    const StampedLock::Stamp s = lock_.try_optimistic_read();
    if (s != 0) {
      section();
      if (lock_.validate(s)) return 0;
    }
    const StampedLock::Stamp r = lock_.read_lock();
    section();
    lock_.unlock_read(r);
    return 1;
  }
  LockStatsSnapshot stats() const noexcept { return lock_.stats(); }

 private:
  StampedLock lock_;
  StampedLock::Stamp write_ = 0;
};

// absl::Mutex in reader-writer mode, deadlock detection off for exactly the
// adapter's lifetime (local_peers.hpp's rules apply: only one such adapter,
// and no plain AbslMutex, alive at a time).
class alignas(kCacheLineSize) AbslReaderWriterMutex {
 public:
  void lock() {
    mutex_.WriterLock();
    detail::tsan_acquired(this);
  }
  bool try_lock() {
    if (!mutex_.WriterTryLock()) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() {
    detail::tsan_releasing(this);
    mutex_.WriterUnlock();
  }
  void lock_shared() {
    mutex_.ReaderLock();
    detail::tsan_acquired(this);
  }
  void unlock_shared() {
    detail::tsan_releasing(this);
    mutex_.ReaderUnlock();
  }

 private:
  AbslDeadlockDetectionScope scope_{absl::OnDeadlockCycle::kIgnore};  // first: outlives mutex_
  absl::Mutex mutex_;
};

// tbb::spin_rw_mutex (it has the four calls itself; the adapter only aligns
// it). Header-only atomics, which TSan sees.
class alignas(kCacheLineSize) TbbSpinRwMutex {
 public:
  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }
  void lock_shared() { mutex_.lock_shared(); }
  void unlock_shared() { mutex_.unlock_shared(); }

 private:
  tbb::spin_rw_mutex mutex_;
};

// tbb::queuing_rw_mutex; the caller's scoped_lock (its queue node) lives in
// the caller's slot from lock()/lock_shared() to the matching unlock.
// Precondition for the unlocks: the calling thread holds the lock in that
// mode. lock() and lock_shared() throw std::length_error, touching nothing,
// from a thread whose slot index is >= the capacity.
class alignas(kCacheLineSize) TbbQueuingRwMutex {
 public:
  explicit TbbQueuingRwMutex(std::uint32_t thread_capacity = kDefaultThreadSlots)
      : slots_(thread_capacity, "tbb.queuing_rw_mutex") {}

  void lock() { acquire(/*write=*/true); }
  bool try_lock() {
    if (!slots_.mine().node.try_acquire(mutex_, /*write=*/true)) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() { release(); }
  void lock_shared() { acquire(/*write=*/false); }
  void unlock_shared() { release(); }

 private:
  void acquire(bool write) {
    Slot& s = slots_.mine();
    s.node.acquire(mutex_, write);
    detail::tsan_acquired(this);
  }
  void release() {
    detail::tsan_releasing(this);
    slots_.mine().node.release();
  }
  struct alignas(kCacheLineSize) Slot {
    tbb::queuing_rw_mutex::scoped_lock node;
  };
  tbb::queuing_rw_mutex mutex_;  // declared first: the slots release into it
  detail::PerThreadSlots<Slot> slots_;
};

// One mutex for both sides: the baseline a read-write lock must beat to be
// worth its reader count.
template <class M>
class MutexForBothSides {
 public:
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  void lock_shared() { m_.lock(); }
  void unlock_shared() { m_.unlock(); }

 private:
  M m_;
};

// No lock: the read (and write) sections alone, the ceiling of every curve.
// Not a lock: writers do not exclude anyone.
class NoReadWriteLock {
 public:
  void lock() noexcept {}
  void unlock() noexcept {}
  void lock_shared() noexcept {}
  void unlock_shared() noexcept {}
};

}  // namespace locklab::bench::peers
