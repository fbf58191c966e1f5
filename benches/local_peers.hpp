// local_peers.hpp — the locks other people ship, as thin Lockable adapters,
// so the `locks` suite measures them on the same harness, the same machine
// and in the same run as ours: local contention curves against the peers.
// Every adapter offers lock()/unlock(), and try_lock() where the library has
// one; none adds work on the path the library itself runs, except the
// per-thread node lookup that the queue locks need (below).
//
// The peers and their algorithms
// ------------------------------
// - NoLock ("none"): lock() and unlock() do nothing. Not a lock: the
//   harness's own cost per operation (loop, deadline flag, latency sampling,
//   the busy-work call), the ceiling no lock can pass on this machine.
// - GlibcAdaptiveMutex ("glibc.adaptive"): pthread_mutex_t of type
//   PTHREAD_MUTEX_ADAPTIVE_NP, glibc's spin-then-park mutex. lock(): one CAS
//   0 -> 1; on failure (glibc 2.36, x86-64) spin with binary exponential
//   backoff (1, 2, 4 .. 16 `pause`s plus jitter), re-trying a read then a
//   CAS, for at most min(mutex_spin_count tunable, default 100; 2 * the
//   mutex's running average + 10) pauses, then park on the futex (the same
//   3-state word as std::mutex, Drepper's mutex #3). The running average
//   (`__spins += (spent - __spins) / 8`) is glibc's adaptation. Unfair.
//   std::mutex is the same mutex with the spinning left out (the NORMAL type).
// - AbslMutex ("absl.Mutex"): abseil's Mutex as Debian ships it. One word
//   holds the lock bits and a pointer to a queue of waiting threads; lock()
//   is one CAS when free, else it spins ~1500 iterations (multi-core) and
//   then enqueues the thread on that queue under a spin bit in the word and
//   sleeps on a per-thread semaphore (futex). Unlock wakes one waiter, which
//   competes with running threads (a woken writer may be "designated" so a
//   newcomer does not starve it). Debian's libabsl-dev is compiled without
//   NDEBUG, so absl's *deadlock detector* runs on every lock() and unlock():
//   each takes the process-wide `deadlock_graph_mu` spin lock (once in
//   lock(), once in unlock()) to look the mutex up in a global graph of
//   lock-order edges, and updates the thread's held-locks list. That
//   serialises every absl::Mutex in the process on one global lock and is why
//   the shipped mutex is several times slower than its algorithm.
// - AbslMutexNoDeadlockDetection ("absl.Mutex(no-detect)"): the same
//   mutex with the detector off: absl::SetMutexDeadlockDetectionMode(kIgnore)
//   for exactly the lifetime of the adapter (see "Measuring absl both ways").
// - TbbSpinMutex ("tbb.spin_mutex"): oneTBB's spin_mutex: an exchange loop
//   on a byte with TBB's atomic_backoff (1, 2, 4, 8, 16 `pause`s, then
//   sched_yield() on every further failure). Unfair; the yield is what keeps
//   it alive when waiters outnumber cores.
// - TbbQueuingMutex ("tbb.queuing_mutex"): oneTBB's queuing_mutex, an MCS
//   queue lock whose queue node is the scoped_lock object; the waiter spins on
//   its own node with the same backoff (pause, then yield). FIFO.
// - CkFasLock ("ck.fas"): ConcurrencyKit's ck_spinlock_fas: exchange
//   (fetch-and-store) 0 -> 1; on failure spin reading the word with `pause`
//   until it looks free, then exchange again (test-and-test-and-set). No
//   backoff, no yield, unfair.
// - CkTicketLock ("ck.ticket"): ck_spinlock_ticket: one 32-bit word holds
//   the next ticket (high 16 bits) and the ticket being served (low 16);
//   lock() is one fetch-and-add on the high half, then spin with `pause`
//   until the low half reaches the ticket; unlock() increments the low half.
//   FIFO, so the lock is handed to the next ticket even when its thread is
//   not running (the oversubscription cliff).
// - CkMcsLock ("ck.mcs"): ck_spinlock_mcs, Mellor-Crummey & Scott: each
//   waiter appends its node with one exchange on the tail and spins on its
//   own node; unlock clears the successor's flag. FIFO, local spinning.
// - CkClhLock ("ck.clh"): ck_spinlock_clh, Craig / Landin-Hagersten: each
//   waiter marks its node busy, swaps it into the tail and spins on its
//   PREDECESSOR's node; unlock clears its own node's flag and the thread
//   takes over the predecessor's node for its next acquire (nodes migrate
//   between threads). FIFO, one exchange to lock, one store to unlock.
//
// Per-thread queue nodes (TbbQueuingMutex, CkMcsLock, CkClhLock)
// -------------------------------------------------------------
// These libraries pass a node to lock() and unlock(); the Lockable API
// cannot. Each adapter owns a table of cache-line-padded slots, one per
// thread slot (primitives/thread_slot.hpp: a dense per-thread index, one
// thread_local load), holding the thread's node for THIS lock. A thread
// holds a given non-recursive lock at most once, so its slot's node is free
// whenever it calls lock(). For CLH the table holds, per slot, the pointer
// to the node the thread currently owns, plus the node it started with; all
// capacity + 1 nodes live in the adapter, so nodes that migrate between
// threads never outlive the lock, and a slot reused by a new thread inherits
// a free node. The table has a fixed capacity (kDefaultThreadSlots unless
// the constructor says otherwise): lock() from a thread whose slot is >=
// capacity throws std::length_error before it touches the lock (nothing is
// lost; the lock stays usable by other threads). The price is ~capacity *
// 128-256 bytes per lock (32-64 KiB by default): a bench adapter, not a
// general-purpose lock.
//
// ck's MCS and CLH headers are C: they assign ck_pr_fas_ptr()'s void* to a
// typed pointer, which C++ rejects. Rather than wrapping them in a C file
// (which would add a call to every acquire), this header includes those two
// headers with ck_pr_fas_ptr briefly redefined to a proxy that converts the
// void* explicitly (detail::CkVoidPtr); the macro is undefined right after.
// The ck headers must therefore be included only through this header in a
// C++ translation unit.
//
// Measuring absl both ways in one process
// ---------------------------------------
// The detector mode is process-global (an atomic inside the library that
// every lock() reads) and absl offers no getter. AbslDeadlockDetectionScope
// sets a mode and restores the previous one when it ends; this header
// tracks the mode it last set (starting from kAbort, the default of a
// library built without NDEBUG and without TSan, which is Debian's), so
// scopes nest. AbslMutexNoDeadlockDetection holds such a scope as its FIRST
// member: the mode is kIgnore from before the absl::Mutex is constructed
// until after it is destroyed, so a bench point that builds, runs and
// destroys one lock measures the algorithm alone, and the next point (a
// plain AbslMutex) is measured with the detector back on. Two rules keep the
// library's bookkeeping consistent, and the bench follows them:
//   - switch modes only while no absl::Mutex is held by any thread (a lock
//     entered in the thread's held-locks list under one mode and left under
//     the other leaves a stale entry);
//   - do not let a mutex that was locked with detection on be destroyed
//     with it off: it stays a node of the global lock-order graph, and a
//     later mutex at the same address inherits its edges (false reports).
// So: never keep a plain AbslMutex alive across an
// AbslMutexNoDeadlockDetection's lifetime, and never run the two at once.
// A direct call to absl::SetMutexDeadlockDetectionMode elsewhere in the
// process is not seen by the tracking. With a library built with NDEBUG the
// detector is compiled out and both peers measure the same thing.
//
// Fair comparison details
// -----------------------
// Every adapter is aligned to kCacheLineSize, as our own locks are, so no
// peer shares a line with whatever the heap put next to it. absl's and ck's
// synchronisation is invisible to ThreadSanitizer (an uninstrumented library;
// inline assembly): under TSan the adapters tell it about the acquire and the
// release (__tsan_acquire / __tsan_release on the adapter's address), so the
// TSan build checks the data the locks protect instead of reporting false
// races; CkClhLock also hides ck's own node accesses from it (see
// detail::TsanIgnoreAccesses).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include <absl/synchronization/mutex.h>
#include <ck_pr.h>
#include <oneapi/tbb/queuing_mutex.h>
#include <oneapi/tbb/spin_mutex.h>
#include <spinlock/fas.h>
#include <spinlock/ticket.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "primitives/cache_line.hpp"
#include "primitives/thread_slot.hpp"

namespace locklab::bench::peers {

namespace detail {

// ck_pr_fas_ptr() returns void*; C converts it implicitly, C++ needs a cast.
// This proxy converts to any object pointer type (see the header essay).
struct CkVoidPtr {
  void* p;
  template <class T>
  operator T*() const noexcept {  // NOLINT(google-explicit-constructor): the point
    return static_cast<T*>(p);
  }
};

}  // namespace detail
}  // namespace locklab::bench::peers

// A function-like macro does not expand inside its own expansion, so the
// inner ck_pr_fas_ptr is ck's function.
#define ck_pr_fas_ptr(target, value) (::locklab::bench::peers::detail::CkVoidPtr{ck_pr_fas_ptr((target), (value))})
#include <spinlock/clh.h>
#include <spinlock/mcs.h>
#undef ck_pr_fas_ptr

namespace locklab::bench::peers {

namespace detail {

// Happens-before edges for ThreadSanitizer where the library's own
// synchronisation is invisible to it (see the header essay). No-ops otherwise.
inline void tsan_acquired([[maybe_unused]] const void* lock) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(lock));
#endif
}
inline void tsan_releasing([[maybe_unused]] const void* lock) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(lock));
#endif
}

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

// Under TSan, hides the calling thread's plain memory accesses from it for
// the guard's lifetime (no-op otherwise). For ck's CLH only: its nodes
// migrate between threads and are handed over by (invisible) inline-assembly
// stores, and its unlock reads the node after the point where the adapter
// can tell TSan about the release, so TSan would report ck's own node
// accesses as races. The data the lock protects stay checked.
class TsanIgnoreAccesses {
 public:
  TsanIgnoreAccesses() noexcept {
#if defined(__SANITIZE_THREAD__)
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
  }
  ~TsanIgnoreAccesses() {
#if defined(__SANITIZE_THREAD__)
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  }
  TsanIgnoreAccesses(const TsanIgnoreAccesses&) = delete;
  TsanIgnoreAccesses& operator=(const TsanIgnoreAccesses&) = delete;
};

// The per-thread node table of the queue-lock adapters (see "Per-thread
// queue nodes"). `Slot` must be default-constructible; the table is fixed
// at construction.
template <class Slot>
class PerThreadSlots {
 public:
  // Throws std::invalid_argument for capacity 0. `owner` names the adapter
  // in the error message.
  PerThreadSlots(std::uint32_t capacity, const char* owner) : capacity_(capacity), owner_(owner) {
    if (capacity == 0) throw std::invalid_argument(std::string(owner) + ": thread-slot capacity must be >= 1");
    slots_ = std::make_unique<Slot[]>(capacity);
  }

  // The calling thread's slot. Throws std::length_error if the thread's
  // slot index is >= capacity (the caller has touched nothing yet).
  Slot& mine() {
    const std::uint32_t s = this_thread_slot();
    if (s >= capacity_) [[unlikely]] {
      throw std::length_error(std::string(owner_) + ": this thread's slot " + std::to_string(s) +
                              " is >= the lock's capacity of " + std::to_string(capacity_) +
                              " threads; construct it with a larger capacity");
    }
    return slots_[s];
  }

  Slot& operator[](std::uint32_t i) noexcept { return slots_[i]; }
  std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  std::uint32_t capacity_;
  const char* owner_;
  std::unique_ptr<Slot[]> slots_;
};

// What absl's detector mode is, as far as this header knows (see "Measuring
// absl both ways").
inline std::atomic<absl::OnDeadlockCycle> absl_detection_mode{absl::OnDeadlockCycle::kAbort};

}  // namespace detail

// Enough for the suites' largest waiter count (128 in --mode=full) plus the
// process's other threads.
inline constexpr std::uint32_t kDefaultThreadSlots = 256;

// ---------------------------------------------------------------- none

// No lock at all: the harness's own cost. Provides no mutual exclusion.
class alignas(kCacheLineSize) NoLock {
 public:
  void lock() noexcept {}
  bool try_lock() noexcept { return true; }
  void unlock() noexcept {}
};

// --------------------------------------------------------------- glibc

// pthread_mutex_t of type PTHREAD_MUTEX_ADAPTIVE_NP. Non-recursive; unlock
// by a non-owner is undefined (as for std::mutex).
class alignas(kCacheLineSize) GlibcAdaptiveMutex {
 public:
  // Throws std::system_error if glibc refuses the attribute or the init.
  GlibcAdaptiveMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    int rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    if (rc == 0) rc = pthread_mutex_init(&mutex_, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_mutex_init(PTHREAD_MUTEX_ADAPTIVE_NP)");
  }
  ~GlibcAdaptiveMutex() { pthread_mutex_destroy(&mutex_); }
  GlibcAdaptiveMutex(const GlibcAdaptiveMutex&) = delete;
  GlibcAdaptiveMutex& operator=(const GlibcAdaptiveMutex&) = delete;

  // Blocks until held. Throws std::system_error on an error code (EAGAIN,
  // EDEADLK cannot occur for this type; kept as std::mutex does).
  void lock() {
    if (const int rc = pthread_mutex_lock(&mutex_); rc != 0)
      throw std::system_error(rc, std::generic_category(), "pthread_mutex_lock");
  }
  bool try_lock() noexcept { return pthread_mutex_trylock(&mutex_) == 0; }
  void unlock() noexcept { pthread_mutex_unlock(&mutex_); }

 private:
  pthread_mutex_t mutex_;
};

// ---------------------------------------------------------------- absl

// Sets absl's process-global deadlock-detection mode for the scope's
// lifetime and restores the mode it found (as tracked by this header) at
// the end. Preconditions: see "Measuring absl both ways" (no absl::Mutex
// held anywhere when the scope begins or ends). Scopes nest LIFO.
class AbslDeadlockDetectionScope {
 public:
  explicit AbslDeadlockDetectionScope(absl::OnDeadlockCycle mode) noexcept
      : previous_(detail::absl_detection_mode.exchange(mode)) {
    absl::SetMutexDeadlockDetectionMode(mode);
  }
  ~AbslDeadlockDetectionScope() {
    detail::absl_detection_mode.store(previous_);
    absl::SetMutexDeadlockDetectionMode(previous_);
  }
  AbslDeadlockDetectionScope(const AbslDeadlockDetectionScope&) = delete;
  AbslDeadlockDetectionScope& operator=(const AbslDeadlockDetectionScope&) = delete;

  // The mode this header last set (kAbort, the library default, if none).
  static absl::OnDeadlockCycle current() noexcept { return detail::absl_detection_mode.load(); }

 private:
  absl::OnDeadlockCycle previous_;
};

// absl::Mutex as shipped (exclusive mode only).
class alignas(kCacheLineSize) AbslMutex {
 public:
  void lock() {
    mutex_.Lock();
    detail::tsan_acquired(this);
  }
  bool try_lock() {
    if (!mutex_.TryLock()) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() {
    detail::tsan_releasing(this);
    mutex_.Unlock();
  }

 private:
  absl::Mutex mutex_;
};

// absl::Mutex with the deadlock detector off for this object's whole
// lifetime (the scope is constructed before the mutex and destroyed after
// it). Only one of these, and no plain AbslMutex, should be alive at a time.
class alignas(kCacheLineSize) AbslMutexNoDeadlockDetection {
 public:
  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }

 private:
  AbslDeadlockDetectionScope scope_{absl::OnDeadlockCycle::kIgnore};  // first: outlives mutex_
  AbslMutex mutex_;
};

// ----------------------------------------------------------------- TBB

// tbb::spin_mutex (it is Lockable itself; the adapter only aligns it).
class alignas(kCacheLineSize) TbbSpinMutex {
 public:
  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }

 private:
  tbb::spin_mutex mutex_;
};

// tbb::queuing_mutex; the caller's scoped_lock (its queue node) lives in the
// caller's slot from lock() to unlock(). Precondition for unlock(): the
// calling thread holds the lock.
class alignas(kCacheLineSize) TbbQueuingMutex {
 public:
  explicit TbbQueuingMutex(std::uint32_t thread_capacity = kDefaultThreadSlots)
      : slots_(thread_capacity, "tbb.queuing_mutex") {}

  void lock() { slots_.mine().node.acquire(mutex_); }
  bool try_lock() { return slots_.mine().node.try_acquire(mutex_); }
  void unlock() { slots_.mine().node.release(); }

 private:
  struct alignas(kCacheLineSize) Slot {
    tbb::queuing_mutex::scoped_lock node;
  };
  tbb::queuing_mutex mutex_;  // declared first: the slots release into it
  detail::PerThreadSlots<Slot> slots_;
};

// ------------------------------------------------------- ConcurrencyKit

// ck_spinlock_fas (test-and-test-and-set with exchange).
class alignas(kCacheLineSize) CkFasLock {
 public:
  void lock() noexcept {
    ck_spinlock_fas_lock(&lock_);
    detail::tsan_acquired(this);
  }
  bool try_lock() noexcept {
    if (!ck_spinlock_fas_trylock(&lock_)) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() noexcept {
    detail::tsan_releasing(this);
    ck_spinlock_fas_unlock(&lock_);
  }

 private:
  ck_spinlock_fas_t lock_ = CK_SPINLOCK_FAS_INITIALIZER;
};

// ck_spinlock_ticket (FIFO).
class alignas(kCacheLineSize) CkTicketLock {
 public:
  void lock() noexcept {
    ck_spinlock_ticket_lock(&lock_);
    detail::tsan_acquired(this);
  }
  bool try_lock() noexcept {
    if (!ck_spinlock_ticket_trylock(&lock_)) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() noexcept {
    detail::tsan_releasing(this);
    ck_spinlock_ticket_unlock(&lock_);
  }

 private:
  ck_spinlock_ticket_t lock_ = CK_SPINLOCK_TICKET_INITIALIZER;
};

// ck_spinlock_mcs (FIFO queue lock) with a node per thread slot.
// Precondition for unlock(): the calling thread holds the lock.
class alignas(kCacheLineSize) CkMcsLock {
 public:
  explicit CkMcsLock(std::uint32_t thread_capacity = kDefaultThreadSlots) : slots_(thread_capacity, "ck.mcs") {}

  void lock() {
    ck_spinlock_mcs_lock(&tail_, &slots_.mine().node);
    detail::tsan_acquired(this);
  }
  bool try_lock() {
    if (!ck_spinlock_mcs_trylock(&tail_, &slots_.mine().node)) return false;
    detail::tsan_acquired(this);
    return true;
  }
  void unlock() {
    detail::tsan_releasing(this);
    ck_spinlock_mcs_unlock(&tail_, &slots_.mine().node);
  }

 private:
  struct alignas(kCacheLineSize) Slot {
    ck_spinlock_mcs_context_t node{};
  };
  ck_spinlock_mcs_t tail_ = CK_SPINLOCK_MCS_INITIALIZER;
  detail::PerThreadSlots<Slot> slots_;
};

// ck_spinlock_clh (FIFO queue lock; nodes migrate between threads). No
// try_lock: ck has none for CLH. Precondition for unlock(): the calling
// thread holds the lock.
class alignas(kCacheLineSize) CkClhLock {
 public:
  explicit CkClhLock(std::uint32_t thread_capacity = kDefaultThreadSlots) : slots_(thread_capacity, "ck.clh") {
    for (std::uint32_t i = 0; i < slots_.capacity(); ++i) slots_[i].mine = &slots_[i].node;
    ck_spinlock_clh_init(&tail_, &unowned_);
  }

  void lock() {
    Slot& s = slots_.mine();
    {
      detail::TsanIgnoreAccesses hide_ck_nodes;
      ck_spinlock_clh_lock(&tail_, s.mine);
    }
    detail::tsan_acquired(this);
  }
  // Leaves the thread owning its predecessor's node (ck updates s.mine).
  void unlock() {
    Slot& s = slots_.mine();
    detail::tsan_releasing(this);
    detail::TsanIgnoreAccesses hide_ck_nodes;
    ck_spinlock_clh_unlock(&s.mine);
  }

 private:
  struct Slot {
    // The node this slot started with; other threads spin on it while it
    // is in the queue, so it has a line of its own.
    alignas(kCacheLineSize) ck_spinlock_clh_t node{};
    // The node the slot's thread owns now; touched by that thread only.
    alignas(kCacheLineSize) ck_spinlock_clh_t* mine = nullptr;
  };
  ck_spinlock_clh_t* tail_ = nullptr;
  alignas(kCacheLineSize) ck_spinlock_clh_t unowned_{};  // the queue's initial node
  detail::PerThreadSlots<Slot> slots_;
};

}  // namespace locklab::bench::peers
