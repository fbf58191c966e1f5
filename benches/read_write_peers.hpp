// read_write_peers.hpp — the read-write locks of the `rwlocks` suite that
// need an adapter to be driven by run_read_write_contention
// (benches/harness/read_write.hpp): glibc's pthread_rwlock in its two
// policies, StampedLock read pessimistically and optimistically, a plain
// mutex for both sides, and no lock at all. std::shared_mutex and
// ReentrantReadWriteLock need none (they have lock_shared()).
#pragma once

#include <pthread.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>

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
