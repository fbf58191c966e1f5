// semaphore.hpp — java.util.concurrent.Semaphore: a count of permits that
// threads take (acquire) and give back (release), with no owner.
//
// What it guarantees
// ------------------
// A Semaphore holds `available_permits()` permits, 0 <= permits <=
// kMaxPermits. acquire(n) takes n permits, waiting until they are there;
// release(n) gives n permits back (wakes whoever they are enough for). The
// permits are just a number: there is no record of who took them, so
//
//   * any thread may release, including one that never acquired (the reason
//     the service of the ticket-sale semaphore herd chose a Semaphore over a
//     ReentrantLock (docs/case-studies.md#semaphore-herd-at-a-ticket-sale):
//     its request was acquired in an AOP advice on one thread and released in
//     a coroutine's `finally` on another, and a ReentrantLock would refuse
//     that unlock);
//   * nothing stops a thread from releasing permits it never took (the count
//     just grows); guard against that in the caller if it matters.
//
// Happens-before: everything a thread did before release() happens-before
// everything a thread does after an acquire() that took (some of) those
// permits. So a Semaphore(1) used as acquire/release around a critical
// section is a (non-reentrant, ownerless) mutex.
//
// Two orderings, chosen at construction (the same `Fairness` selects the
// ReentrantLock's; both sit on one QueuedSynchronizer,
// primitives/queued_synchronizer.hpp, which has the algorithm):
//
//   kFair     Strict FIFO. No thread takes permits while anyone is queued,
//             not even try_acquire() (unlike Java's untimed tryAcquire(),
//             which barges even on a fair semaphore; here fair means FIFO
//             without exception). The queued thread at the head is woken
//             while the thread before it still runs, which hides the
//             wake-up only when a core is free: with more waiters than
//             cores a contended acquisition costs about one wake-up. A
//             large request at the head blocks smaller ones behind it,
//             exactly like Java's fair Semaphore: acquire(5) with 3 permits
//             free keeps acquire(1) behind it waiting. Bound: a waiter is
//             overtaken by nobody.
//   kUnfair   (default) Barging. A release adds its permits and wakes the
//             head of the queue unless a woken thread is already coming,
//             but any running thread may take the permits first. Faster
//             under contention (the permits never sit idle waiting for a
//             sleeping thread to be scheduled, Java's reason for making
//             unfair the default). The queue itself is served in order and
//             the woken head keeps its place; after it has been awake 2 ms
//             without its permits, newcomers stop barging until it has them.
//             As in Java, a large request at the head also blocks smaller
//             queued ones (but not barging newcomers).
//
// What is invalid (std::invalid_argument, and nothing changes):
//   n <= 0 or n > kMaxPermits in any acquire/release; a release that would
//   take the count above kMaxPermits; a negative initial count.
// kMaxPermits is 2^59 - 1, the synchronizer's permit field (Java's limit is
// Integer.MAX_VALUE, 2^31 - 1; release() says why the field's own limit).
// Destroying a Semaphore while a thread waits in it is undefined (as for
// std::mutex); a Semaphore is neither copyable nor movable.
//
// Timeouts: try_acquire_for(d) / try_acquire_until(t) measure on
// std::chrono::steady_clock (other clocks are converted once, at the call).
// A zero or negative duration, or a deadline already passed, is a single try
// that never waits (Java's tryAcquire(0, unit)). A timed try that fails
// returns no earlier than its deadline; how much later is not bounded: futex
// timer slack (50 us by default for normal threads) plus scheduling delay,
// typically < 100 us on an idle machine and a time slice or more on an
// overloaded one.
//
// When to use it
// --------------
// - To cap how many threads do something at once (a pool of N connections:
//   Semaphore(N)), or to give one thread's release to another thread.
// - As a lock whose acquire and release may run on different threads (the
//   ticket-sale semaphore herd's per-key Semaphore(1)). If the same thread
//   always releases, prefer ReentrantLock: it catches an unlock by the wrong
//   thread, which a Semaphore cannot (it has no idea who "the wrong thread"
//   is).
//
// What it costs
// -------------
// Uncontended acquire(1): one fetch_sub on the synchronizer's word; other
// acquires: one load and one compare-exchange; every release: one
// fetch_add (a refused one, a second to take it back); no system call, no
// statistics. A contended acquire parks in the ParkingLot and, woken, spins
// its adaptive SpinPolicy budget (like AdaptiveMutex; fair mode spins while
// nobody is queued first); a release wakes at most one thread, and only
// when no woken thread is already coming (the thundering herd of the
// ticket-sale case study is avoided by construction). Memory:
// the QueuedSynchronizer (two cache lines and LockStats, ~1.2 KiB).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "primitives/deadline.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab {

class Semaphore {
 public:
  // The limit on the permit count and on n: 2^59 - 1 (see release()).
  static constexpr std::ptrdiff_t kMaxPermits = QueuedSynchronizer::kMaxPermits;

  // Pre: 0 <= initial_permits <= kMaxPermits, else throws
  // std::invalid_argument. Post: available_permits() == initial_permits.
  explicit Semaphore(std::ptrdiff_t initial_permits, Fairness fairness = Fairness::kUnfair,
                     SpinPolicy policy = SpinPolicy::adaptive());
  // Pre: no thread is waiting in this semaphore.
  ~Semaphore() = default;
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Takes n permits, waiting as long as it takes.
  // Throws std::invalid_argument (and waits for nothing) unless
  // 1 <= n <= kMaxPermits. Post: this thread took n permits.
  // acquire(1) tries first with one fetch_sub, as AdaptiveMutex::lock does
  // (61 -> 67-70 M acquire/release pairs/s uncontended on the reference
  // Intel VM); a try that finds no permit gives it back with a fetch_add.
  void acquire(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::acquire");
    if (n == 1 && sync_.try_acquire_one_by_sub()) return;
    sync_.acquire(n);
  }

  // Takes n permits if they are available now, without waiting; true if it
  // took them. In fair mode it also fails while any thread is queued (no
  // barging); in unfair mode while a starving head is being served. Throws
  // like acquire(). It may also fail while another thread's acquire(1) is
  // giving back a permit it found missing (see available_permits()): a few
  // nanoseconds in which that permit reads as taken.
  bool try_acquire(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire");
    return sync_.try_acquire(n);
  }

  // Like acquire() but gives up once `timeout` has passed; true if it took
  // the permits. timeout <= 0 is a single try (try_acquire). A false return
  // happens no earlier than now + timeout (steady clock). Throws like
  // acquire().
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& timeout, std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire_for");
    if (timeout <= timeout.zero()) return sync_.try_acquire(n);
    return sync_.acquire_until(n, detail::steady_deadline_after(timeout));
  }

  // Like try_acquire_for, with an absolute deadline; a deadline already
  // passed is a single try.
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline, std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire_until");
    return sync_.acquire_until(n, detail::to_steady_deadline(deadline));
  }

  // Gives back n permits (any thread may), waking a queued waiter if one
  // should be woken. Throws std::invalid_argument, changing nothing, unless
  // 1 <= n <= kMaxPermits and available_permits() + n <= kMaxPermits.
  // One fetch_add decides (QueuedSynchronizer::try_release_by_add): a
  // release that would go over the limit is taken back before it throws,
  // and no thread can take the excess meanwhile, because kMaxPermits is the
  // largest count the synchronizer's word holds and the excess wraps it to
  // a negative count. (A load and a compare-exchange would decide exactly
  // too, at 69 M acquire/release pairs/s uncontended against 90 M.) The
  // one blind spot, acquires that find no permit giving theirs back at
  // that very instant, matters only within a few permits of 2^59.
  void release(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::release");
    if (!sync_.try_release_by_add(n)) throw_overflow(n);
  }

  // The permits available now (a snapshot; exact when nothing runs
  // concurrently). While an acquire(1) that found no permit is giving back
  // the one it took, the snapshot may read one below the true count, even
  // below 0.
  std::ptrdiff_t available_permits() const noexcept { return sync_.available(); }

  bool is_fair() const noexcept { return sync_.is_fair(); }

  // Whether any thread is waiting in acquire / a timed try (a snapshot).
  bool has_queued_threads() const noexcept { return queue_length() != 0; }
  // How many threads are queued (a snapshot, exact while none joins or
  // leaves). A thread on its way into the queue (or, with newcomers_spin,
  // still spinning before it queues) is not counted; the woken head is,
  // until it returns.
  std::ptrdiff_t queue_length() const noexcept { return sync_.queue_length(); }

  // Slow-path statistics: contended acquires, polls spun, parks, wakes.
  LockStatsSnapshot stats() const noexcept { return sync_.stats(); }
  // The adaptive spin budget, in polls.
  std::uint32_t spin_budget() const noexcept { return sync_.spin_budget(); }

 private:
  static void check_count(std::ptrdiff_t n, const char* who) {
    if (n <= 0 || n > kMaxPermits) throw_bad_count(n, who);
  }
  [[noreturn]] static void throw_bad_count(std::ptrdiff_t n, const char* who);
  [[noreturn]] void throw_overflow(std::ptrdiff_t n) const;

  QueuedSynchronizer sync_;
};

}  // namespace locklab
