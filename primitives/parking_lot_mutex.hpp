// parking_lot_mutex.hpp — a one-byte barging mutex that spins while nobody
// sleeps and otherwise sleeps in the ParkingLot (primitives/parking_lot.hpp):
// WebKit's WTF::Lock and Rust's parking_lot::Mutex, plus Go's "woken" bit.
// It is the third step of the ladder 3-state futex mutex (AdaptiveMutex's
// word) -> adaptive spinning -> parking lot.
//
// Why
// ---
// AdaptiveMutex sleeps in futex_wait on its own lock word. Under contention
// that word changes every few hundred nanoseconds, so a waiter's futex_wait
// mostly returns at once; the waiter then re-arms the word ("may have
// sleepers"), and the next release pays a futex_wake for a thread that is not
// asleep (wakes_per_acquire 0.15-0.36 at cs_ns:200 with parks_per_acquire
// ~0 in the reference run). Here a waiter sleeps on its own Parker in the
// lot, which no lock traffic touches, and the word says exactly whether
// anybody is queued, so a release wakes only when there is a sleeper and no
// successor is already awake.
//
// The word (one byte)
// -------------------
//   bit     | meaning
//   kHeld   | some thread owns the lock
//   kParked | at least one thread is queued in the lot on this mutex (exact:
//           | set by a waiter before it queues, cleared only by the release
//           | whose unpark_one() says no other thread is queued)
//   kWoken  | a release has woken a queued thread that has not yet taken the
//           | lock or queued again: a successor is awake, so releases wake
//           | nobody more (it will take the lock, or queue and clear the bit)
// Every combination is reachable; kHeld alone is the uncontended state.
//
// lock():   CAS 0 -> kHeld (acquire). Else the slow path: while nobody is
//           parked, spin up to the adaptive budget polling for !kHeld, and
//           take the lock with a CAS that keeps the other bits; then set
//           kParked and park_if(validate: kHeld and kParked both still set).
//           Unparked with the hand-off token: the lock is already ours (kHeld
//           was never cleared). Unparked without it: we are the woken
//           successor; loop (spin again, or queue again).
// unlock(): CAS kHeld -> 0 (release). Else the slow path: with kWoken set or
//           kParked clear, clear kHeld and wake nobody; otherwise
//           unpark_one(), and under the lot's bucket lock write the word:
//           either a direct hand-off (kHeld kept, the woken thread told by
//           its token) when the lot says it is time to be fair, or kHeld
//           cleared and kWoken set.
//
// Guarantees
// ----------
// Mutual exclusion; no lost wake-ups (the lot's validate-under-bucket-lock
// argument, parking_lot.hpp "What it guarantees"); no system call, no lot
// access and no statistics on an uncontended lock() or unlock(); at most one
// woken-but-not-running successor at a time, so a release under heavy
// contention costs one CAS, not a futex_wake.
// Fairness: barging. A running thread may take the lock ahead of queued
// ones, which keeps the lock busy while a woken thread is being scheduled.
// Bounded by the lot's fair turns: at least 1 ms after this bucket's last
// fair turn, a release hands the lock directly to the longest-queued thread
// (the token reaches exactly that thread: nobody else can take a word whose
// kHeld stays set). The queue is FIFO, so a thread with k others ahead of it
// in the queue waits about (k + 1) ms of contention at most, plus scheduling
// delays. Not fair: a newcomer can overtake queued threads between turns.
//
// Spinning
// --------
// Only while kParked is clear: once anybody sleeps, the lock is too busy for
// a spin to be likely to win, and the spinner would take a core from the
// holder (2 cores here). The budget adapts as AdaptiveMutex's does (+1/4 + 1
// after a spin that won, -1/8 - 1 after one that ended in a park, within the
// policy's bounds), and SpinPolicy's park-only, spin-only and fixed variants
// apply unchanged. Spin-only still queues when a deadline has to be honoured
// only by a timed try; untimed it never parks.
//
// Orderings
// ---------
// The fast paths are an acquire CAS and a release CAS on the word; the slow
// paths take the lock with acquire CASes and release it with release CASes
// or, in unpark_one()'s callback, a release store. A hand-off passes the
// lock without touching kHeld: the releaser's critical section happens-before
// its callback, which happens-before the woken thread's return from park_if
// (parking_lot.hpp "Memory orders"). Relaxed loads are only hints that a
// CAS or the lot then confirms.
//
// What is invalid
// ---------------
// unlock() by a thread that does not hold the lock, or of an unlocked mutex
// (an assert in debug builds; undefined in release, as for std::mutex);
// destroying it while a thread waits on it; recursive locking (deadlock).
//
// Cost: the state is 1 byte (the queue lives in the lot); the spin budget
// and the statistics sit on cache lines of their own so that spinners do
// not disturb the holder.
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdint>

#include "primitives/adaptive_mutex.hpp"  // SpinPolicy
#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/timed_try_lock.hpp"

namespace locklab {

class ParkingLotMutex : public TimedTryLock<ParkingLotMutex> {
 public:
  explicit ParkingLotMutex(SpinPolicy policy = SpinPolicy::adaptive()) noexcept;
  ParkingLotMutex(const ParkingLotMutex&) = delete;
  ParkingLotMutex& operator=(const ParkingLotMutex&) = delete;

  // Blocks until the caller holds the lock. Pre: the caller does not hold it.
  void lock() noexcept {
    std::uint8_t expected = 0;
    if (word_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_slow();
  }

  // Takes the lock if it is free at this instant (whatever the other bits
  // say); never waits, never a system call, records no statistics.
  bool try_lock() noexcept {
    std::uint8_t w = word_.load(std::memory_order_relaxed);
    while (!(w & kHeld)) {
      if (word_.compare_exchange_weak(w, w | kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  // try_lock_for(d), try_lock_until(t): from TimedTryLock (primitives/timed_try_lock.hpp),
  // on try_lock() and lock_slow_until().

  // Releases the lock; wakes one queued thread only if one is queued and no
  // successor is awake. Pre: the caller holds it.
  void unlock() noexcept {
    std::uint8_t expected = kHeld;
    if (word_.compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed)) return;
    assert((expected & kHeld) && "ParkingLotMutex::unlock: lock not held");
    unlock_slow();
  }

  // A racy hint: true if the lock was held at the moment of the load.
  bool is_locked() const noexcept { return word_.load(std::memory_order_relaxed) & kHeld; }
  // The adaptive spin budget, in polls (for tests and teaching).
  std::uint32_t spin_budget() const noexcept { return spin_budget_.load(std::memory_order_relaxed); }
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  friend class TimedTryLock<ParkingLotMutex>;

  static constexpr std::uint8_t kHeld = 1;
  static constexpr std::uint8_t kParked = 2;
  static constexpr std::uint8_t kWoken = 4;
  // The token of a direct hand-off: the woken thread owns the lock.
  static constexpr std::intptr_t kHandoffToken = 1;

  void lock_slow() noexcept;
  bool lock_slow_until(std::chrono::steady_clock::time_point deadline) noexcept;
  template <bool kTimed>
  bool acquire_slow(std::chrono::steady_clock::time_point deadline) noexcept;
  void unlock_slow() noexcept;
  void wake_for_free_lock() noexcept;
  void adapt(bool won) noexcept;

  std::atomic<std::uint8_t> word_{0};
  // Slow-path-only heuristics, off the word's cache line.
  alignas(kCacheLineSize) std::atomic<std::uint32_t> spin_budget_;
  std::atomic<std::uint32_t> probes_{0};  // contended acquires at budget 0 (see kProbeEvery)
  SpinPolicy policy_;
  LockStats stats_;
};

}  // namespace locklab
