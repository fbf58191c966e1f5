// my_seqlock.hpp — the instructor's solution of the exercise seqlock: a
// sequence counter and four words, read optimistically, written under the
// counter. Read the starter (exercises/seqlock/my_seqlock.hpp) for the
// contract; this file argues each order. primitives/stamped_lock.hpp is the
// lab's own seqlock (its optimistic read), with the longer essay.
//
// The memory-model argument in five lines (Boehm, "Can seqlocks get along
// with programming language memory models?", MSPC 2012):
//   1. The words are read and written with std::atomic_ref, relaxed: a
//      reader runs concurrently with a writer by design, and plain loads
//      beside those stores are a data race (undefined behaviour, whatever
//      validate() says afterwards). Relaxed is enough; the order comes from
//      the sequence and the fences.
//   2. read_begin() loads the sequence with acquire: it pairs with
//      write_unlock()'s release store, so the reader sees that writer's words.
//   3. validate() fences with acquire *before* re-loading the sequence: if a
//      word load read a value some writer stored, that writer's release fence
//      (4) synchronizes with this fence, so the writer's odd sequence
//      happens-before the re-load, which reads it (or later) and fails.
//   4. write_lock() makes the sequence odd, then fences with release, so no
//      word store is seen by (3) before the odd sequence.
//   5. write_unlock() stores the next even sequence with release: the words
//      stored in the section are ordered before it, for (2).
// ThreadSanitizer does not model stand-alone fences (GCC 12 refuses them
// under -fsanitize=thread), so a TSan build uses read-modify-writes that it
// does model and that are at least as strong: the odd sequence by an acq_rel
// exchange (4), the re-load by fetch_add(0, acq_rel) (3). The release build
// keeps the fences: on x86-64 both compile to nothing but a compiler barrier,
// while the RMWs would write the sequence's line on every read.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {

// What the seqlock protects: four words a writer always writes together.
// The checks write {v, v, v, v}: a read that returns two different words is
// torn, and must never validate.
struct Reading {
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::int64_t c = 0;
  std::int64_t d = 0;
  friend bool operator==(const Reading&, const Reading&) = default;
};

class MySeqLock {
 public:
  MySeqLock() = default;
  MySeqLock(const MySeqLock&) = delete;
  MySeqLock& operator=(const MySeqLock&) = delete;

  // ---- writers ---------------------------------------------------------
  // Spins until the sequence is even, then makes it odd. Acquire on success:
  // the previous writer's words (ordered before its release in
  // write_unlock) happen-before ours.
  void write_lock() noexcept {
    for (;;) {
      std::uint64_t s = sequence_.load(std::memory_order_relaxed);
      if ((s & 1) == 0 && begin_write(s)) return;
      cpu_relax();
    }
  }

  bool try_write_lock() noexcept {
    std::uint64_t s = sequence_.load(std::memory_order_relaxed);
    return (s & 1) == 0 && begin_write(s);
  }

  // Precondition: the caller holds the write lock. Only the holder writes
  // the sequence, so the relaxed load reads its own odd value.
  void write_unlock() noexcept {
    sequence_.store(sequence_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Precondition: the caller holds the write lock.
  void store(const Reading& r) noexcept {
    std::atomic_ref(data_.a).store(r.a, std::memory_order_relaxed);
    std::atomic_ref(data_.b).store(r.b, std::memory_order_relaxed);
    std::atomic_ref(data_.c).store(r.c, std::memory_order_relaxed);
    std::atomic_ref(data_.d).store(r.d, std::memory_order_relaxed);
  }

  void write(const Reading& r) noexcept {
    write_lock();
    store(r);
    write_unlock();
  }

  // ---- readers: nothing below writes shared memory (outside TSan) -------
  std::uint64_t read_begin() const noexcept { return sequence_.load(std::memory_order_acquire); }

  Reading load() const noexcept {
    return Reading{std::atomic_ref(data_.a).load(std::memory_order_relaxed),
                   std::atomic_ref(data_.b).load(std::memory_order_relaxed),
                   std::atomic_ref(data_.c).load(std::memory_order_relaxed),
                   std::atomic_ref(data_.d).load(std::memory_order_relaxed)};
  }

  // An odd stamp (taken during a write) never validates.
  bool validate(std::uint64_t stamp) const noexcept {
#if defined(__SANITIZE_THREAD__)
    return (stamp & 1) == 0 && sequence_.fetch_add(0, std::memory_order_acq_rel) == stamp;
#else
    std::atomic_thread_fence(std::memory_order_acquire);
    return (stamp & 1) == 0 && sequence_.load(std::memory_order_relaxed) == stamp;
#endif
  }

  Reading read() const noexcept {
    for (;;) {
      const std::uint64_t s = read_begin();
      if ((s & 1) == 0) {
        const Reading r = load();
        if (validate(s)) return r;
      }
      cpu_relax();
    }
  }

 private:
  // From even s to s + 1, then the fence of (4).
  bool begin_write(std::uint64_t s) noexcept {
#if defined(__SANITIZE_THREAD__)
    return sequence_.compare_exchange_strong(s, s + 1, std::memory_order_acq_rel, std::memory_order_relaxed);
#else
    if (!sequence_.compare_exchange_strong(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return false;
    }
    std::atomic_thread_fence(std::memory_order_release);
    return true;
#endif
  }

  // The sequence and the words share one cache line (8 + 32 bytes): a write
  // invalidates one line in every reader's cache, not two, so a reader after
  // a write misses once. alignas keeps other objects off that line (false
  // sharing with whatever the caller puts next to the lock).
  // mutable: validate() under TSan writes it (fetch_add(0)).
  alignas(kCacheLineSize) mutable std::atomic<std::uint64_t> sequence_{0};
  // mutable: std::atomic_ref (C++20) takes a non-const object, and readers
  // are const.
  mutable Reading data_;
};

}  // namespace locklab::exercises
