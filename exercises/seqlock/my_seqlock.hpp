// my_seqlock.hpp — YOUR seqlock for the exercise seqlock (read README.md
// first): four words that readers read without writing anything, and a
// sequence counter that tells them afterwards whether a writer came by.
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the methods marked TODO. Run the checks with
//   exercises/check.sh seqlock
//
// The contract (what my_seqlock_test.cpp checks)
// ----------------------------------------------
// - Writers exclude each other: write_lock() returns once the caller is the
//   only writer, with happens-before from each write_unlock() to the next
//   write_lock()'s return; try_write_lock() takes it only if free, never
//   waits. store(r) (under the write lock) writes the four words.
// - Readers never block writers: a reader holds nothing. A write_lock()
//   completes while a reader sits between read_begin() and validate().
// - read_begin() returns a stamp; load() returns the four words as they are
//   now (possibly torn: half an old write, half a new one); validate(stamp)
//   says whether the load()s since read_begin() saw no write at all. A read
//   that overlapped any part of a write section (stamp taken during a write,
//   or a write_lock() since) never validates; a read that overlapped none
//   does. read() loops until a read validates and returns that Reading.
// - Readers write no shared memory (they are const).
//
// The algorithm to write
// ----------------------
//   sequence_  even while no writer holds the lock, odd while one does.
//   write_lock:   spin until sequence_ is even s, compare-exchange it to s + 1.
//   write_unlock: sequence_ = s + 2 (only the holder writes it).
//   read_begin:   the stamp is sequence_.
//   validate(s):  s is even and sequence_ still equals s.
// The hard part is the C++ memory model. A reader runs concurrently with a
// writer by design: if its loads of data_ are plain loads while a writer
// stores, that is a data race (undefined behaviour, even when validate()
// then rejects the read). So every load and store of the words goes through
// std::atomic_ref (relaxed is enough: the order comes from the sequence).
// Then choose the orders: which sequence load must be acquire, which store
// release, and where do you need a fence? (Hint: acquire orders the loads
// AFTER it, release the stores BEFORE it; validate() must order the data
// loads before its re-load of the sequence, write_lock() the data stores
// after its odd sequence.) The grade runs the checks under ThreadSanitizer,
// which finds plain loads, but knows nothing of stand-alone fences (GCC
// refuses std::atomic_thread_fence under -fsanitize=thread): under
// `#if defined(__SANITIZE_THREAD__)` use read-modify-writes instead (a CAS or
// exchange with acq_rel for the odd sequence; fetch_add(0, acq_rel) for
// validate's re-load). primitives/stamped_lock.hpp's essay argues it all.
#pragma once

#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"

namespace locklab::exercises {

// What the seqlock protects: four words a writer always writes together
// (given, keep it). The checks write {v, v, v, v}: a read that returns two
// different words is torn, and must never validate.
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
  // Returns once the caller is the only writer (spin with cpu_relax()).
  void write_lock() noexcept {
    // TODO(you)
  }

  // Takes the write lock only if no writer holds it; never waits.
  bool try_write_lock() noexcept {
    // TODO(you)
    return true;
  }

  // Precondition: the caller holds the write lock.
  void write_unlock() noexcept {
    // TODO(you)
  }

  // Precondition: the caller holds the write lock. Writes the four words.
  void store(const Reading& r) noexcept {
    // TODO(you): std::atomic_ref(data_.a).store(r.a, ...) for each word
    static_cast<void>(r);
  }

  // Given.
  void write(const Reading& r) noexcept {
    write_lock();
    store(r);
    write_unlock();
  }

  // ---- readers: const, they write nothing -------------------------------
  // The stamp to validate later.
  std::uint64_t read_begin() const noexcept {
    // TODO(you)
    return 0;
  }

  // The four words as they are now (may be torn).
  Reading load() const noexcept {
    // TODO(you): std::atomic_ref(data_.a).load(...) for each word
    return Reading{};
  }

  // True only if no write overlapped the reads since read_begin() gave `stamp`.
  bool validate(std::uint64_t stamp) const noexcept {
    // TODO(you)
    static_cast<void>(stamp);
    return true;
  }

  // Retries read_begin(), load(), validate() until one validates.
  Reading read() const noexcept {
    // TODO(you)
    return load();
  }

 private:
  // The sequence and the words share one cache line (8 + 32 bytes): a write
  // invalidates one line in every reader's cache, not two, so a reader after
  // a write misses once. alignas keeps other objects off that line (false
  // sharing with whatever the caller puts next to the lock).
  alignas(kCacheLineSize) mutable std::atomic<std::uint64_t> sequence_{0};
  // mutable: std::atomic_ref (C++20) takes a non-const object, and readers
  // are const.
  mutable Reading data_;
};

}  // namespace locklab::exercises
