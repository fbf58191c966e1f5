// stamped_lock.hpp — java.util.concurrent.locks.StampedLock: a write lock,
// a read lock and an optimistic read, each named by a stamp. The optimistic
// read is a seqlock: a reader that writes no shared memory at all, and then
// asks whether a writer came by while it was reading.
//
// What it guarantees
// ------------------
// Every acquisition returns a stamp (std::uint64_t); 0 means "failed".
//
//   call                          succeeds when                       returns
//   write_lock()                  nobody holds either lock (waits)    a write stamp
//   read_lock()                   no writer holds it (waits)          a read stamp
//   try_optimistic_read()         no writer holds it now              an optimistic stamp, else 0
//   validate(s)                   no write lock was taken since s     true / false
//                                 was issued (a write stamp: it is
//                                 still held)
//   try_convert_to_write_lock(s)  s is the held write stamp: s;       a write stamp, else 0
//                                 s a read stamp of the only reader:
//                                 that read becomes the write lock;
//                                 s optimistic and still valid and
//                                 the lock free: the write lock
//   unlock_write(s), unlock_read(s), unlock(s)                        throws on a wrong stamp
//
// - Readers share, a writer excludes, with happens-before from unlock_write
//   to every later acquisition and from unlock_read to the next writer
//   (the same QueuedSynchronizer as ReentrantReadWriteLock: a reader takes
//   one of kAllPermits permits, a writer all of them; see that header for
//   why the synchronizer's shared mode is a read-write lock).
// - An optimistic read that overlapped any part of a write section fails
//   validate(): a successful validate(s) means the loads made between
//   try_optimistic_read() and validate(s) saw no write that any write
//   section made after s was issued, and saw every write made before it
//   (tested: a reader that raced a write never validates, concurrently and
//   in a deterministic interleaving). A read stamp validates while no
//   writer has come since (so while it is held); a write stamp while it is
//   held.
// - Not reentrant, no owner (as in Java): a thread that write_lock()s twice
//   waits for itself forever; any thread may unlock with a stamp it was
//   handed. Fairness is the synchronizer's (kUnfair by default: a queued
//   writer is overtaken by readers for at most 2 ms once it heads the
//   queue; kFair: a queued writer stops new readers at once).
// - A wrong stamp is refused: unlock_write(s) unless s is the write stamp
//   now held, unlock_read(s) unless s is a read stamp of the current
//   version and some read lock is held, unlock(s) with an optimistic stamp
//   or 0, all throw
//       std::system_error with std::errc::operation_not_permitted
//   and change nothing (Java's IllegalMonitorStateException;
//   ReentrantLock's error). Stamps carry no owner, so, as in Java, a read
//   stamp of the current version presented by a thread that holds no read
//   lock while others do is indistinguishable from a good one: it releases
//   one of their reads. Two unlock_write(s) of one stamp race safely: one
//   succeeds, the other throws.
// - Timeouts: try_write_lock_for/until, try_read_lock_for/until on
//   steady_clock (a zero/negative/past timeout is one try; a failure comes
//   no earlier than the deadline).
//
// The stamp
// ---------
// version_ counts write sections twice, on its own cache line: even while
// no writer holds the lock, odd while one does (incremented when a writer
// gets in and again when it leaves). A stamp is (version << 2) | mode, mode
// 1 optimistic, 2 read, 3 write, so no stamp is 0 and the mode is in the
// stamp. Versions wrap after 2^61 write sections (centuries at a write per
// nanosecond), then a stamp could in principle validate a second time.
// Optimistic readers touch only version_'s line, which changes only on
// writes: read_lock()'s compare-exchange on the permit word (the line every
// pessimistic reader fights over) never disturbs them. That is the whole
// case for optimistic reads.
//
// Why the data must be read with atomics, and the fences (the seqlock under
// the C++ memory model; Boehm, "Can seqlocks get along with programming
// language memory models?", MSPC 2012)
// ---------------------------------------------------------------------
// An optimistic reader runs concurrently with a writer by design. If the
// reader's loads of the shared data were plain loads and the writer's plain
// stores, that is a data race, and a program with a data race has undefined
// behaviour, full stop: validate() failing afterwards does not make it
// defined (the compiler may assume no race: tear, re-load, or cache values
// across the validation). So:
//   1. Every datum an optimistic reader may read concurrently with a writer
//      is read with an atomic load (std::atomic<T> fields, or
//      std::atomic_ref<T> on plain fields) and written by writers with an
//      atomic store. memory_order_relaxed suffices for both: the ordering
//      comes from the version and the fences below. On x86-64 and AArch64 a
//      relaxed load or store of a word is an ordinary mov / ldr / str; the
//      atomics cost nothing but what they forbid the compiler to do.
//      (Torn multi-word values are not a problem: a torn read is a read
//      that overlapped a write, which validate() rejects.)
//   2. try_optimistic_read() loads version_ with acquire: it reads the even
//      version that the last writer's unlock_write stored with release, so
//      the reader's later loads see that writer's data (or newer).
//   3. validate() issues std::atomic_thread_fence(acquire) *before* it loads
//      version_ again (relaxed). Without the fence, the data loads (relaxed)
//      could be ordered after the second load of version_: the reader could
//      read an unchanged version and then the data of a writer that started
//      afterwards. With it: if any data load read a value that a writer
//      stored, the writer's release fence (4) before that store synchronizes
//      with this acquire fence, so the writer's odd version (stored before
//      its fence) happens-before the re-load, which therefore reads the odd
//      version or later, and validation fails. An acquire *load* of version_
//      would not do: acquire orders the loads after it, not before it.
//   4. write_lock() stores the odd version, then issues
//      std::atomic_thread_fence(release), then the caller stores its data:
//      the fence keeps the data stores from being seen before the odd
//      version by a reader that uses (3). A release store of the odd
//      version would not do: release orders the stores before it, not
//      after it.
//   5. unlock_write() stores the next even version with release (a
//      compare-exchange, which also catches a double unlock): the data
//      stores of the section are ordered before it, for (2).
// Under ThreadSanitizer: TSan does not model stand-alone fences (GCC 12
// rejects them under -fsanitize=thread), so a TSan build replaces the two
// fences with read-modify-writes that it does model and that are formally
// at least as strong (Boehm's "read-don't-modify-write"): begin_write
// stores the odd version with an acq_rel exchange, and validate() re-reads
// the version with fetch_add(0, acq_rel). If the validating RMW comes
// before the writer's odd exchange in version_'s modification order, the
// exchange reads from it, so it synchronizes with it and the reader's data
// loads happen-before the writer's data stores (they cannot read them);
// otherwise the RMW reads the odd version or later and validation fails.
// Those RMWs write version_'s line on every validation, which is why the
// release build keeps the fences (free on x86-64).
// Pessimistic readers and writers need none of this: the synchronizer's
// acquire/release give them happens-before, and their data may stay plain
// if no optimistic reader reads it. tests/primitives/stamped_lock_test.cpp
// reads with std::atomic_ref and is clean under TSan; the same reader with
// plain loads is reported by TSan as a data race with the writer's stores,
// however often validate() rejects the torn reads.
//
// What it costs
// -------------
// try_optimistic_read(): one load (acquire is a plain mov on x86-64);
// validate(): a compiler fence on x86-64 (an acquire fence emits no
// instruction there; a dmb ishld on AArch64) and one load. No write to
// shared memory at all, so optimistic readers scale with cores until
// writers come. write_lock/unlock_write: the synchronizer's
// compare-exchanges plus a store and a compare-exchange of version_.
// read_lock/unlock_read: the synchronizer's compare-exchange each, plus a
// load of version_. Memory: a QueuedSynchronizer (~1.2 KiB) and version_'s
// cache line.
//
// Memory orders, besides the seqlock's above: the permits' acquire/release
// (queued_synchronizer.hpp). version_ is written only by the thread holding
// all permits, so its increments need no read-modify-write for exclusion:
// the permits order one writer's stores before the next's, and a reader
// holding a read permit sees a version that cannot change until it lets go.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/deadline.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab {

class StampedLock {
 public:
  using Stamp = std::uint64_t;
  static constexpr std::int64_t kAllPermits = QueuedSynchronizer::kMaxPermits;

  explicit StampedLock(Fairness fairness = Fairness::kUnfair, SpinPolicy policy = SpinPolicy::adaptive())
      : sync_(kAllPermits, fairness, policy) {}
  // Pre: nobody holds or waits for the lock.
  ~StampedLock() = default;
  StampedLock(const StampedLock&) = delete;
  StampedLock& operator=(const StampedLock&) = delete;

  // ---- write ------------------------------------------------------------
  Stamp write_lock() noexcept {
    sync_.acquire(kAllPermits);
    return begin_write();
  }
  Stamp try_write_lock() noexcept { return sync_.try_acquire(kAllPermits) ? begin_write() : 0; }
  template <class Rep, class Period>
  Stamp try_write_lock_for(const std::chrono::duration<Rep, Period>& timeout) noexcept {
    if (timeout <= timeout.zero()) return try_write_lock();
    return sync_.acquire_until(kAllPermits, detail::steady_deadline_after(timeout)) ? begin_write() : 0;
  }
  template <class Clock, class Duration>
  Stamp try_write_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) noexcept {
    return sync_.acquire_until(kAllPermits, detail::to_steady_deadline(deadline)) ? begin_write() : 0;
  }
  // Throws std::system_error(operation_not_permitted), changing nothing,
  // unless `stamp` is the write stamp now held.
  void unlock_write(Stamp stamp);

  // ---- read -------------------------------------------------------------
  Stamp read_lock() noexcept {
    sync_.acquire(1);
    return read_stamp();
  }
  Stamp try_read_lock() noexcept { return sync_.try_acquire(1) ? read_stamp() : 0; }
  template <class Rep, class Period>
  Stamp try_read_lock_for(const std::chrono::duration<Rep, Period>& timeout) noexcept {
    if (timeout <= timeout.zero()) return try_read_lock();
    return sync_.acquire_until(1, detail::steady_deadline_after(timeout)) ? read_stamp() : 0;
  }
  template <class Clock, class Duration>
  Stamp try_read_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) noexcept {
    return sync_.acquire_until(1, detail::to_steady_deadline(deadline)) ? read_stamp() : 0;
  }
  // Throws std::system_error(operation_not_permitted), changing nothing,
  // unless `stamp` is a read stamp of the current version and a read lock
  // is held.
  void unlock_read(Stamp stamp);

  // unlock_write or unlock_read, by the stamp's mode; an optimistic stamp
  // or 0 throws like they do.
  void unlock(Stamp stamp);

  // ---- optimistic read (see the essay for the rules on the data) -------
  Stamp try_optimistic_read() const noexcept {
    // Acquire: pairs with unlock_write's release (essay, 2).
    const std::uint64_t v = version_.load(std::memory_order_acquire);
    return (v & 1) != 0 ? 0 : make_stamp(v, kOptimistic);
  }
  bool validate(Stamp stamp) const noexcept {
#if defined(__SANITIZE_THREAD__)
    // See "Under ThreadSanitizer".
    return stamp != 0 && version_.fetch_add(0, std::memory_order_acq_rel) == version_of(stamp);
#else
    // The fence orders the caller's data loads before the re-load (essay, 3).
    std::atomic_thread_fence(std::memory_order_acquire);
    return stamp != 0 && version_.load(std::memory_order_relaxed) == version_of(stamp);
#endif
  }

  // A write stamp for `stamp`, or 0 (and nothing changed): see the table.
  // Never waits.
  Stamp try_convert_to_write_lock(Stamp stamp) noexcept;

  // ---- queries (snapshots) --------------------------------------------
  bool is_write_locked() const noexcept { return (version_.load(std::memory_order_relaxed) & 1) != 0; }
  std::int64_t read_lock_count() const noexcept {
    return is_write_locked() ? 0 : kAllPermits - sync_.available();
  }
  bool is_read_locked() const noexcept { return read_lock_count() > 0; }
  std::int64_t queue_length() const noexcept { return sync_.queue_length(); }
  bool is_fair() const noexcept { return sync_.is_fair(); }
  LockStatsSnapshot stats() const noexcept { return sync_.stats(); }

  static bool is_write_stamp(Stamp s) noexcept { return mode_of(s) == kWrite; }
  static bool is_read_stamp(Stamp s) noexcept { return mode_of(s) == kRead; }
  static bool is_optimistic_stamp(Stamp s) noexcept { return mode_of(s) == kOptimistic; }

 private:
  static constexpr std::uint64_t kOptimistic = 1;
  static constexpr std::uint64_t kRead = 2;
  static constexpr std::uint64_t kWrite = 3;
  static constexpr unsigned kModeBits = 2;

  static constexpr Stamp make_stamp(std::uint64_t version, std::uint64_t mode) noexcept {
    return (version << kModeBits) | mode;
  }
  static constexpr std::uint64_t version_of(Stamp s) noexcept { return s >> kModeBits; }
  static constexpr std::uint64_t mode_of(Stamp s) noexcept { return s & ((1u << kModeBits) - 1); }

  // Pre: this thread holds all permits. Makes the version odd, then fences
  // (essay, 4). Relaxed load and store: only the holder of all permits
  // writes version_, and the permits order writers.
  Stamp begin_write() noexcept {
    const std::uint64_t v = version_.load(std::memory_order_relaxed) + 1;
#if defined(__SANITIZE_THREAD__)
    version_.exchange(v, std::memory_order_acq_rel);  // see "Under ThreadSanitizer"
#else
    version_.store(v, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
#endif
    return make_stamp(v, kWrite);
  }
  // Pre: this thread holds a read permit, so no writer can change version_
  // until it lets go; the permit's acquire made the last writer's even
  // version visible. Relaxed is therefore exact.
  Stamp read_stamp() const noexcept { return make_stamp(version_.load(std::memory_order_relaxed), kRead); }

  [[noreturn]] static void throw_bad_stamp(const char* what, Stamp stamp);

  QueuedSynchronizer sync_;  // kAllPermits = free; a reader holds 1, a writer all
  // Its own line: optimistic readers must not share the permit word's.
  // mutable: a TSan build's validate() reads it with a read-modify-write.
  alignas(kCacheLineSize) mutable std::atomic<std::uint64_t> version_{0};
};

}  // namespace locklab
