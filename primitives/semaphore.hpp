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
// ReentrantLock's, which is built on this class):
//
//   kFair     Strict FIFO. A waiter is served in arrival order and a release
//             hands its permits *directly* to the waiters at the head of the
//             queue ("hand-off"): they leave acquire() owning them, and no
//             thread can take permits while anyone is queued, not even
//             try_acquire() (unlike Java's untimed tryAcquire(), which barges
//             even on a fair semaphore; here fair means FIFO without
//             exception). A large request at the head blocks smaller ones
//             behind it, exactly like Java's fair Semaphore: acquire(5) with
//             3 permits free keeps acquire(1) behind it waiting.
//             Bound: a waiter is overtaken by nobody.
//   kUnfair   (default) Barging. A release adds its permits to the count and
//             wakes the head waiter, but any thread that arrives before the
//             head has woken up (tens of microseconds) may take them instead;
//             the head then goes back to sleep, still first in the queue.
//             Faster under contention (the permits never sit idle waiting for
//             a sleeping thread to be scheduled, Java's reason for making
//             unfair the default) but a waiter can in principle be overtaken
//             any number of times. A release wakes only the head, and a
//             queued waiter tries only when woken (and once right after
//             joining the queue, like any newcomer), so the queue itself is
//             served in order; only newcomers barge.
//
// What is invalid (std::invalid_argument, and nothing changes):
//   n <= 0 or n > kMaxPermits in any acquire/release; a release that would
//   take the count above kMaxPermits; a negative initial count.
// kMaxPermits is INT32_MAX, Java's limit (Integer.MAX_VALUE).
// Destroying a Semaphore while a thread waits in it is undefined (as for
// std::mutex); a Semaphore is neither copyable nor movable.
//
// Timeouts: try_acquire_for(d) / try_acquire_until(t) measure on
// std::chrono::steady_clock (other clocks are converted once, at the call).
// A zero or negative duration, or a deadline already passed, is a single try
// that never waits (Java's tryAcquire(0, unit)). A timed try that fails
// returns no earlier than its deadline: the kernel's CLOCK_MONOTONIC (which
// is steady_clock) has passed it when the futex wait times out. How much
// later is not bounded: futex timer slack (50 us by default for normal
// threads) plus scheduling delay, typically < 100 us on an idle machine and
// a time slice or more on an overloaded one.
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
// Uncontended acquire: one load and one compare-exchange on `state_`; so is
// a release with nobody queued. No system call, no statistics. A contended
// acquire additionally takes the internal queue lock twice (to join and, in
// unfair mode, to leave the queue) and sleeps on a futex; a release with
// waiters takes the queue lock once and makes one futex_wake per waiter it
// serves (unfair mode: per release). Stats (LockStats) record only those slow
// paths. Memory: one cache line for the permit word, one for the queue
// lock and queue, and LockStats (~1 KiB); each waiting thread keeps its queue
// node on its own stack.
//
// How it works
// ------------
// `state_` packs the permit count and one flag into a 64-bit word:
//     state_ = permits << 1 | kQueued
// kQueued is set exactly while the waiter queue is non-empty (it is changed
// only under the queue lock). Putting the flag in the permit word is what
// lets the fast paths decide with a single compare-exchange: a fast acquire
// in fair mode needs "no one queued AND enough permits", and a fast release
// needs "no one queued" (if someone is, the release must go and wake them).
// A compare-exchange on the whole word fails if either part changed.
//
// The waiter queue is a doubly linked list of nodes on the waiting threads'
// stacks, in arrival order, guarded by a tiny test-and-test-and-set spin lock
// (`queue_lock_`; held only for a few pointer moves, never across a system
// call; it yields to the scheduler after 64 polls so a preempted holder does
// not make 2 cores spin a whole time slice). Each node carries its own 32-bit
// futex word, so a release wakes exactly the thread it means to wake, never a
// herd (problem 2 of the ticket-sale semaphore herd, the thundering herd,
// avoided by construction). This is the shape of Java's
// AbstractQueuedSynchronizer (a state word plus a FIFO queue of parked
// threads), with the CLH-style lock-free queue replaced by a spin-locked list
// that is easier to read.
//
// Fair mode hands off: release() adds its permits and then, under the queue
// lock, grants them to the head waiters while they fit (subtracting their
// permits, unlinking them and marking them granted); after dropping the
// lock it stores 1 into each granted node's word and wakes it. The woken
// thread owns its permits; it does nothing but return.
// Unfair mode wakes: release() adds its permits and, if they are enough for
// the head's request, bumps the head node's word (a wake-up counter) and
// wakes it; the head then competes for the permits with a compare-exchange
// like any newcomer. When a woken head leaves the queue (it got its permits
// or timed out) and permits are left for the new head, it wakes that one
// in turn, so no release is ever "used up" by a thread that did not need it.
//
// No lost wake-ups. Fair: a waiter sleeps only while its word is 0
// (futex_wait(word, 0)), and the granter sets it to 1 before waking it.
// Unfair: the waiter reads its word's counter *before* it tries to take the
// permits, and sleeps only if the counter is still that value; a release
// adds its permits *before* it bumps the counter, so either the waiter's try
// sees the permits or its futex_wait sees a changed counter and returns.
// Permits released just before a waiter set kQueued (on the fast path, which
// wakes nobody) are seen by the waiter's own try after it set the flag.
//
// A grant and a timeout can race: a fair waiter whose deadline passes takes
// the queue lock to unlink itself, and if it finds it was granted meanwhile
// it keeps the permits and reports success (like Java, a timed acquire that
// was granted at the last moment succeeds). Removing a timed-out waiter can
// unblock the ones behind it (a big request leaving the head), so it runs
// the grant step too.
//
// One deliberate, benign race: the waker calls futex_wake on a node's word
// *after* storing the value that lets the node's thread return, so the
// thread may already have returned and its stack frame been reused. The
// kernel only uses the address as a hash key: a stale wake lands as a
// spurious wake-up on whatever futex now lives at that address (or nowhere),
// and every futex wait in locklab re-checks its condition in a loop.
// glibc's sem_post makes the same trade (POSIX lets a semaphore be destroyed
// as soon as the last sem_wait returns).
//
// Memory orders
// -------------
// - Fast acquire: compare-exchange with acquire on success (it synchronizes
//   with the release compare-exchange that added the permits, so the
//   releaser's writes are visible); relaxed on failure (nothing was taken).
// - Fast release: compare-exchange with release on success (publishes the
//   releaser's writes to whoever takes these permits).
// - Initial loads before a compare-exchange: relaxed; the exchange checks.
// - Slow paths: everything that touches the queue is ordered by the queue
//   lock (acquire exchange, release store). A fair grant takes the permits
//   out of state_ with an *acquire* compare-exchange: the permits may have
//   been added by a fast-path release on another thread, outside the queue
//   lock (just before a waiter set kQueued), and only an acquire on state_
//   synchronizes with that release. The granter then passes them on through
//   the node word: release store by the granter, acquire load by the
//   waiter, so the releaser's writes happen-before the waiter's return by
//   transitivity. (With a relaxed grant ThreadSanitizer reports a race on
//   the data the lock guards: ReentrantLock's bounded-buffer test caught
//   exactly that.) All RMWs on state_ continue release sequences, so an
//   intervening relaxed fetch_or/fetch_and does not break the chain.
//   Unfair waiters take permits with the same acquire compare-exchange as
//   the fast path; their wake-up counter is bumped with release and read
//   with acquire (that is the "counter first, then permits" argument above).
// - kQueued is set and cleared under the queue lock with relaxed RMWs: the
//   lock orders them with the queue, and the fast paths only need the flag
//   to make their compare-exchange fail, which any change of the word does.
// - queue_length_ is relaxed: a statistic for has_queued_threads() and
//   queue_length(), exact when no thread is joining or leaving the queue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

// The queueing discipline of Semaphore and ReentrantLock (see above).
enum class Fairness : std::uint8_t { kUnfair, kFair };

namespace detail {

// now + d on the steady clock, rounded up, saturating at time_point::max()
// (which the slow paths read as "no deadline") instead of overflowing.
template <class Rep, class Period>
std::chrono::steady_clock::time_point steady_deadline_after(const std::chrono::duration<Rep, Period>& d) {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  const auto room = steady_clock::time_point::max() - now;
  // Compare in floating point: converting e.g. hours::max() to nanoseconds
  // would overflow.
  if (std::chrono::duration<double>(d) >= std::chrono::duration<double>(room)) {
    return steady_clock::time_point::max();
  }
  return now + std::chrono::ceil<steady_clock::duration>(d);
}

// A deadline on any clock as a steady_clock deadline. Other clocks are
// converted once, at the call (like the standard's timed waits).
template <class Clock, class Duration>
std::chrono::steady_clock::time_point to_steady_deadline(const std::chrono::time_point<Clock, Duration>& t) {
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    return std::chrono::ceil<std::chrono::steady_clock::duration>(t);
  } else {
    return steady_deadline_after(t - Clock::now());
  }
}

}  // namespace detail

class Semaphore {
 public:
  // Java's limit (Integer.MAX_VALUE) on the permit count and on n.
  static constexpr std::ptrdiff_t kMaxPermits = std::numeric_limits<std::int32_t>::max();

  // Pre: 0 <= initial_permits <= kMaxPermits, else throws
  // std::invalid_argument. Post: available_permits() == initial_permits.
  explicit Semaphore(std::ptrdiff_t initial_permits, Fairness fairness = Fairness::kUnfair);
  // Pre: no thread is waiting in this semaphore.
  ~Semaphore();
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Takes n permits, waiting as long as it takes.
  // Throws std::invalid_argument (and waits for nothing) unless
  // 1 <= n <= kMaxPermits. Post: this thread took n permits.
  void acquire(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::acquire");
    if (try_acquire_fast(n)) return;
    acquire_slow(n, std::chrono::steady_clock::time_point::max());
  }

  // Takes n permits if they are available now, without waiting; true if it
  // took them. In fair mode it also fails while any thread is queued (no
  // barging, see the essay). It may fail spuriously only in the sense that a
  // concurrent acquire took the permits first. Throws like acquire().
  bool try_acquire(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire");
    return try_acquire_fast(n) || try_acquire_slow(n);
  }

  // Like acquire() but gives up once `timeout` has passed; true if it took
  // the permits. timeout <= 0 is a single try (try_acquire). A false return
  // happens no earlier than now + timeout (steady clock). Throws like
  // acquire().
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& timeout, std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire_for");
    if (try_acquire_fast(n)) return true;
    if (timeout <= timeout.zero()) return try_acquire_slow(n);
    return acquire_slow(n, detail::steady_deadline_after(timeout));
  }

  // Like try_acquire_for, with an absolute deadline; a deadline already
  // passed is a single try.
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline, std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::try_acquire_until");
    if (try_acquire_fast(n)) return true;
    return acquire_slow(n, detail::to_steady_deadline(deadline));
  }

  // Gives back n permits (any thread may), serving queued waiters.
  // Throws std::invalid_argument, changing nothing, unless
  // 1 <= n <= kMaxPermits and available_permits() + n <= kMaxPermits.
  void release(std::ptrdiff_t n = 1) {
    check_count(n, "Semaphore::release");
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    if ((s & kQueued) == 0 && permits_of(s) <= kMaxPermits - n &&
        state_.compare_exchange_strong(s, s + to_units(n), std::memory_order_release, std::memory_order_relaxed)) {
      return;
    }
    release_slow(n);
  }

  // The permits available now (a snapshot; exact when nothing runs
  // concurrently). In fair mode permits granted to a woken waiter are no
  // longer counted, even before that waiter has returned.
  std::ptrdiff_t available_permits() const noexcept { return permits_of(state_.load(std::memory_order_relaxed)); }

  bool is_fair() const noexcept { return fair_; }

  // Whether any thread is waiting in acquire / a timed try (a snapshot).
  bool has_queued_threads() const noexcept { return queue_length() != 0; }
  // How many threads are waiting (a snapshot, exact while none joins or
  // leaves the queue). A fair waiter that has been granted its permits is no
  // longer counted.
  std::ptrdiff_t queue_length() const noexcept { return queue_length_.load(std::memory_order_relaxed); }

  // Slow-path statistics: contended acquires (acquires that had to queue),
  // parks (futex waits that slept), wakes (futex wakes made). Never spins.
  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  struct Waiter;  // a queued thread's node, on its stack (semaphore.cpp)

  static constexpr std::uint64_t kQueued = 1;  // the waiter queue is non-empty
  static constexpr std::uint64_t kOne = 2;     // one permit, in state_ units

  static std::ptrdiff_t permits_of(std::uint64_t s) noexcept { return static_cast<std::ptrdiff_t>(s >> 1); }
  static std::uint64_t to_units(std::ptrdiff_t n) noexcept { return static_cast<std::uint64_t>(n) * kOne; }

  static void check_count(std::ptrdiff_t n, const char* who) {
    if (n <= 0 || n > kMaxPermits) throw_bad_count(n, who);
  }
  [[noreturn]] static void throw_bad_count(std::ptrdiff_t n, const char* who);

  // One compare-exchange; false if it would have to wait, barge in fair
  // mode, or lost a race (the slow paths retry).
  bool try_acquire_fast(std::ptrdiff_t n) noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    if (fair_ && (s & kQueued) != 0) return false;
    return permits_of(s) >= n &&
           state_.compare_exchange_strong(s, s - to_units(n), std::memory_order_acquire, std::memory_order_relaxed);
  }

  // Out of line (semaphore.cpp).
  bool try_acquire_slow(std::ptrdiff_t n) noexcept;
  bool take_barging(std::ptrdiff_t n) noexcept;
  bool acquire_slow(std::ptrdiff_t n, std::chrono::steady_clock::time_point deadline);
  void release_slow(std::ptrdiff_t n);
  bool wait_fair(Waiter& me, std::chrono::steady_clock::time_point deadline);
  bool wait_unfair(Waiter& me, std::chrono::steady_clock::time_point deadline);
  void lock_queue() noexcept;
  void unlock_queue() noexcept;
  void enqueue_locked(Waiter& w) noexcept;
  void unlink_locked(Waiter& w) noexcept;
  Waiter* grant_locked() noexcept;
  std::atomic<std::uint32_t>* head_to_wake_locked() noexcept;
  void wake_granted(Waiter* chain) noexcept;
  void wake(std::atomic<std::uint32_t>* word) noexcept;

  // The hot word, alone on its line: fast paths touch nothing else.
  alignas(kCacheLineSize) std::atomic<std::uint64_t> state_;
  const bool fair_;

  // Slow-path state.
  alignas(kCacheLineSize) std::atomic<std::uint32_t> queue_lock_{0};
  std::atomic<std::ptrdiff_t> queue_length_{0};  // written under queue_lock_
  Waiter* head_ = nullptr;                       // guarded by queue_lock_
  Waiter* tail_ = nullptr;                       // guarded by queue_lock_
  LockStats stats_;
};

}  // namespace locklab
