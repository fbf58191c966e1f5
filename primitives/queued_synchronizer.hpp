// queued_synchronizer.hpp — one waiting algorithm under every blocking
// primitive: a count of permits in one word, threads that cannot take what
// they need queued in the ParkingLot (primitives/parking_lot.hpp), and at
// most one of them awake at a time. java.util.concurrent builds its locks
// this way on AbstractQueuedSynchronizer; here AdaptiveMutex, ReentrantLock
// and Semaphore are thin shells around one QueuedSynchronizer.
//
// The word
// --------
//   bits 63..4  permits (0..kMaxPermits)
//   kParked     at least one thread is queued in the lot on this synchronizer
//               (exact: set by a thread before it queues, cleared only by an
//               unpark whose lot callback says nobody else is queued)
//   kWoken      a designated successor exists: a thread that was woken from
//               the queue (or is being woken right now) and is the next to
//               be served. Releases wake nobody more while it is set, so at
//               most one queued thread is awake at a time.
//   kSuccessorParked  the designated successor spun out its budget and
//               sleeps in the successor slot (a second lot address, one
//               byte into this object); the next release wakes it there
//   kStarving   unfair mode only: the designated successor has waited
//               longer than kFairInterval (1 ms), so newcomers may not barge
//               until it has been served (Go's starvation mode)
// A mutex is a synchronizer with one permit: permits 1 = free, 0 = held.
//
// Who may take permits
// --------------------
// A thread takes n permits with one compare-exchange when permits >= n and
//   unfair: kStarving is clear (barging: a running thread goes ahead of the
//           queue, which keeps the lock busy while a woken thread is being
//           scheduled: 2.6 us at the median, 24 us at the p99 on the
//           reference VM, physical_limits' FutexWakeToRun);
//   fair:   kParked and kWoken are both clear (nobody is waiting), or the
//           thread is the designated successor. Nobody overtakes a queued
//           thread, not even try_acquire().
// The designated successor always may. Anyone else waits: it spins while
// nobody is queued (the adaptive SpinPolicy budget), then sets kParked and
// parks in the lot, validated under the lot's bucket lock ("kParked still
// set and I still cannot take").
//
// Waking, and the one-awake-successor rule
// ----------------------------------------
// A release adds its permits; if kParked is set and kWoken clear it claims
// kWoken in the same compare-exchange and unparks the longest-queued
// thread, which becomes the designated successor. With kWoken already set a
// release wakes nobody (someone is awake and will be served), except that
// it wakes the successor in its slot if kSuccessorParked is set. So a
// contended release costs one compare-exchange, and a futex wake only when
// the next thread to serve is asleep: the churn of FutexMutex (a waiter
// re-arming the word, the next release waking a thread that is not asleep)
// cannot happen.
// The designated successor never goes back to the end of the queue: it
// spins its budget, and then sleeps in the successor slot, still first. When
// it takes its permits it hands the designation on (kWoken kept, the next
// queued thread unparked) if the queue is not empty and
//   fair:   always: the next thread is woken while this one runs its
//           critical section, so that its wake-up latency overlaps the
//           critical section instead of following it (ShflLock's idea).
//           With more waiters than cores that does not pay on the 2-core
//           reference machine: every fair acquisition is still a context
//           switch, most of them onto a core that has just gone idle, and
//           fair modes run at about the JVM's fair speed, not above it.
//           Two variants were measured and were slower: letting queuers
//           spin before they park (to keep their core busy), and keeping
//           two woken threads in line instead of one (the second one
//           needs a core too, and parks again); the reference results'
//           README has the figures;
//   unfair: only if permits are left over (a release of several permits
//           serves several waiters, AQS's "propagate").
// A designated thread that gives up (timeout) hands the designation on if
// permits are free, so no release is used up by a thread that left.
//
// Guarantees
// ----------
// - Permits are conserved: every successful acquire(n) subtracts n, every
//   release(n) adds n, each in one read-modify-write of the word.
// - Happens-before: a release happens-before every acquire that takes (some
//   of) its permits (release/acquire compare-exchanges on the word; the
//   flag updates between them are read-modify-writes, which continue the
//   release sequence).
// - No lost wake-up: a thread sleeps only after validating, under the lot's
//   bucket lock, that a flag it set is still set; whoever clears that flag
//   does so before (release CAS) or inside (lot callback) an unpark on the
//   same address, so either the validation fails or the unpark finds the
//   thread (parking_lot.hpp, "What it guarantees").
// - At most one designated successor; queued threads are served in FIFO
//   order (the lot's order, and the successor keeps its place).
// - Fair mode: a queued thread is overtaken by nobody. Unfair mode: a queued
//   thread may be overtaken by running threads, but once it is the
//   designated successor, at most kFairInterval (1 ms, plus scheduling
//   delay) after it was first woken newcomers stop barging until it has
//   its permits.
// - A large request at the head blocks smaller ones behind it (both modes,
//   as in Java): acquire(5) with 3 permits free keeps an acquire(1) queued
//   behind it waiting, although a barging newcomer (unfair) may take them.
//
// What it costs
// -------------
// Uncontended acquire or release: one relaxed load and one compare-exchange
// on the word; no lot, no clock, no statistics. A contended acquire spins
// (polls of ~20 ns) while nobody is queued, then one park_if (one bucket
// lock, one futex_wait on the thread's own Parker). A release that finds a
// sleeper to wake: one compare-exchange, one unpark_one (bucket lock, futex
// wake). Memory: the word on a cache line of its own, the adaptive budget
// and a waiter count on the next, and LockStats.
//
// Orderings
// ---------
// Taking permits: acquire compare-exchange (it reads the release that added
// them, or a flag RMW that continues its release sequence). Adding permits:
// release compare-exchange. Flag changes (kParked, kWoken, ...) are relaxed
// read-modify-writes: they publish no data, and the lot's bucket lock orders
// them against the validations that read them (a parking thread re-reads
// the word under the lock the unparker's callback runs under). Polls and
// the spin budget are relaxed hints that a compare-exchange then confirms.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/spin_policy.hpp"

namespace locklab {

// The queueing discipline of a synchronizer (see "Who may take permits").
enum class Fairness : std::uint8_t { kUnfair, kFair };

class QueuedSynchronizer {
 public:
  using Clock = std::chrono::steady_clock;
  // Java's limit (Integer.MAX_VALUE) on the permit count.
  static constexpr std::int64_t kMaxPermits = std::numeric_limits<std::int32_t>::max();

  // Pre: 0 <= permits <= kMaxPermits (unchecked: the shells check).
  explicit QueuedSynchronizer(std::int64_t permits, Fairness fairness = Fairness::kUnfair,
                              SpinPolicy policy = SpinPolicy::adaptive()) noexcept;
  // Pre: no thread waits in it.
  ~QueuedSynchronizer() = default;
  QueuedSynchronizer(const QueuedSynchronizer&) = delete;
  QueuedSynchronizer& operator=(const QueuedSynchronizer&) = delete;

  // Takes n permits if the rules let a newcomer take them now ("Who may take
  // permits"); never waits. Pre: 1 <= n <= kMaxPermits.
  bool try_acquire(std::int64_t n = 1) noexcept {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    while (may_barge(w, n)) {
      if (word_.compare_exchange_weak(w, w - units(n), std::memory_order_acquire, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Takes n permits, waiting as long as it takes.
  void acquire(std::int64_t n = 1) noexcept {
    if (!try_acquire(n)) acquire_slow<false>(n, {});
  }

  // Takes n permits unless `deadline` passes first; true if it took them.
  // A deadline already past is one try_acquire(). A false return comes no
  // earlier than the deadline.
  bool acquire_until(std::int64_t n, Clock::time_point deadline) noexcept {
    if (try_acquire(n)) return true;
    if (deadline == Clock::time_point::max()) return acquire_slow<false>(n, {});
    if (Clock::now() >= deadline) return false;
    return acquire_slow<true>(n, deadline);
  }

  // Adds n permits and wakes whoever should be woken. Pre: 1 <= n and
  // available() + n <= kMaxPermits (unchecked; see try_release).
  void release(std::int64_t n = 1) noexcept {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    if (!(w & kWaitFlags) &&
        word_.compare_exchange_strong(w, w + units(n), std::memory_order_release, std::memory_order_relaxed)) {
      return;
    }
    release_slow(n, kMaxPermits);
  }

  // release(n) unless the count would exceed max_permits; then false, and
  // nothing changed (one read-modify-write decides, so it is exact).
  bool try_release(std::int64_t n, std::int64_t max_permits) noexcept { return release_slow(n, max_permits); }

  // Snapshots, for monitoring and tests, not for synchronisation.
  std::int64_t available() const noexcept { return permits_of(word_.load(std::memory_order_relaxed)); }
  // Threads inside a waiting acquire that have queued (the designated
  // successor included). Exact while no thread joins or leaves.
  std::int64_t queue_length() const noexcept { return waiting_.load(std::memory_order_relaxed); }
  bool is_fair() const noexcept { return fair_; }
  // The adaptive spin budget, in polls.
  std::uint32_t spin_budget() const noexcept { return spin_budget_.load(std::memory_order_relaxed); }
  const SpinPolicy& policy() const noexcept { return policy_; }
  // Slow-path statistics: contended acquires, polls spun, parks, wakes.
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  static constexpr std::uint64_t kParked = 1;
  static constexpr std::uint64_t kWoken = 2;
  static constexpr std::uint64_t kSuccessorParked = 4;
  static constexpr std::uint64_t kStarving = 8;
  static constexpr unsigned kPermitShift = 4;
  // Any of these sends a release down the slow path.
  static constexpr std::uint64_t kWaitFlags = kParked | kWoken | kSuccessorParked;

  static constexpr std::uint64_t units(std::int64_t n) noexcept {
    return static_cast<std::uint64_t>(n) << kPermitShift;
  }
  static constexpr std::int64_t permits_of(std::uint64_t w) noexcept {
    return static_cast<std::int64_t>(w >> kPermitShift);
  }

  // May a thread that is not the designated successor take n permits now?
  bool may_barge(std::uint64_t w, std::int64_t n) const noexcept {
    if (permits_of(w) < n) return false;
    return fair_ ? !(w & (kParked | kWoken)) : !(w & kStarving);
  }

  // The successor slot: a second lot address, distinct from the word's.
  const void* successor_slot() const noexcept { return reinterpret_cast<const char*>(&word_) + 1; }

  template <bool kTimed>
  bool acquire_slow(std::int64_t n, Clock::time_point deadline) noexcept;
  bool release_slow(std::int64_t n, std::int64_t max_permits) noexcept;
  void wake_head_claimed() noexcept;
  void pass_on_if_free() noexcept;
  void adapt(bool won) noexcept;

  alignas(kCacheLineSize) std::atomic<std::uint64_t> word_;
  const bool fair_;
  // Slow-path-only state, off the word's cache line so that spinners and
  // queuers do not disturb the holder.
  alignas(kCacheLineSize) std::atomic<std::uint32_t> spin_budget_;
  std::atomic<std::uint32_t> probes_{0};   // contended acquires at budget 0
  std::atomic<std::int64_t> waiting_{0};   // queue_length()
  SpinPolicy policy_;
  LockStats stats_;
};

}  // namespace locklab
