// reentrant_lock.hpp — java.util.concurrent.locks.ReentrantLock: a mutex
// that knows its owner, may be re-acquired by that owner, and refuses to be
// unlocked by anyone else; with condition variables attached.
//
// What it guarantees
// ------------------
// State, as seen by a thread T:
//
//   state                      T: lock()            T: unlock()
//   unlocked                   owner=T, holds=1     throws (not owner)
//   held by T, holds = k       holds = k + 1        holds = k - 1; at 0 unlocked
//   held by U != T             waits (queued)       throws (not owner)
//
// - Mutual exclusion, with happens-before from each final unlock() to the
//   next owner's lock(): a critical section sees everything the previous
//   one wrote.
// - Reentrancy: the owner may lock() / try_lock() again, any number of times
//   (the hold count is 64 bits); it must unlock() as many times.
// - Ownership is checked: unlock(), and await/signal on its Conditions, by a
//   thread that does not hold the lock throw
//       std::system_error with std::errc::operation_not_permitted
//   (Java's IllegalMonitorStateException) and change nothing. This is the
//   difference from a Semaphore(1), which anyone may release.
// - Fairness, chosen at construction (queued_synchronizer.hpp has the
//   details):
//     ReentrantLock lock(Fairness::kFair);   // FIFO, no barging:
//                                            // waiters acquire in arrival
//                                            // order, try_lock() included
//     ReentrantLock lock;                    // kUnfair (default): arrivals may
//                                            // barge past sleeping waiters
//   Unfair is faster under contention (the lock never waits for a sleeping
//   thread to be scheduled); the woken head of the queue keeps its place,
//   and after 2 ms awake without the lock it stops the barging until it has
//   it. Fair gives every waiter a stronger bound (it is overtaken by
//   nobody) and pays about one wake-up per contended acquisition on a
//   machine with fewer cores than waiters (it wakes the next waiter while
//   the holder still runs, which hides the wake-up only when a core is
//   free). Unlike Java, a fair lock's untimed try_lock() does not barge
//   either.
// - Timeouts: try_lock_for / try_lock_until and Condition::await_for /
//   await_until use std::chrono::steady_clock. A zero or negative duration
//   (or a past deadline) is a single try and never waits. A false return
//   comes no earlier than the deadline; how much later depends on futex
//   timer slack and scheduling (typically < 100 us on an idle machine).
//
// Satisfies Lockable and TimedLockable, so std::lock_guard,
// std::unique_lock (with a timeout too) and std::scoped_lock work.
//
// Thread identity. Ownership is the identity of the *OS thread*
// (std::thread::id). Anything that moves a logical task between threads while
// it holds the lock breaks this: a fiber or coroutine that locks on one
// carrier thread, suspends, and resumes on another would have its unlock()
// refused (or worse, a different task scheduled onto the first thread would
// be let in as a reentrant "owner"). That is why the service of the
// ticket-sale semaphore herd used a Semaphore where acquire and release ran
// on different threads, and it is the subject of fibers/ (locks that name a
// fiber, not a thread, as their owner). A thread that exits while holding the
// lock leaves it locked forever (as in Java); since the OS may reuse a dead
// thread's id, a later thread could even appear to own it. Do not do that.
//
// Conditions. `ReentrantLock::Condition c = lock.new_condition();` (or
// `ReentrantLock::Condition c(lock);`) is java.util.concurrent's Condition:
// - await(): the holder atomically (with respect to signal) releases the lock
//   *completely*, however many times it holds it, waits for a signal, and
//   re-acquires it with the *same* hold count before returning. A thread
//   holding the lock 3 times that awaits lets others in, and gets all 3 back.
// - await_for(d) / await_until(t): the same, giving up at the deadline;
//   return true if signalled, false if the time ran out (Java's boolean
//   await(time, unit)). Either way the lock is held again, with the old
//   hold count, on return. A zero or negative timeout returns false at once
//   without releasing the lock (Java releases and re-acquires it).
// - signal() wakes the longest-waiting awaiter (FIFO), signal_all() all of
//   them; with no awaiter they do nothing. The woken thread then competes
//   for (fair: queues for) the lock like any other; it returns from await
//   only once it holds the lock again.
// - No spurious wake-ups: await returns only after a signal (or timeout).
//   (Java allows spurious wake-ups; write the usual `while (!ready) await();`
//   loop anyway, since the state may change between signal and re-lock.)
// - All of these require the caller to hold the lock (else the same
//   std::system_error). A Condition belongs to one lock, must not outlive it,
//   and must not be destroyed while a thread awaits on it.
//
// When to use it
// --------------
// When one thread locks and the same thread unlocks, and you want either
// reentrancy (a locked method calling another locked method), conditions,
// timeouts, fairness, or a guard against unlock-by-the-wrong-thread. When
// acquire and release may run on different threads, use Semaphore. Without
// any of these, AdaptiveMutex is the same algorithm minus the owner
// bookkeeping (a relaxed load and a relaxed store of the owner per lock and
// per unlock, and in unlock a load of the extra holds).
//
// What it costs
// -------------
// Uncontended lock(): a relaxed load of the owner (the reentrancy check,
// on the permit word's line), one fetch_sub on the word, one relaxed store
// of the owner. unlock(): a relaxed load and store of the owner, a plain
// load of the extra holds, one fetch_add. So two atomic read-modify-writes
// per lock/unlock pair, like std::mutex; a reentrant lock() is a
// thread-identity compare, a reentrant unlock() no atomic read-modify-write
// at all. Contended paths are the QueuedSynchronizer's (unfair: a park in
// the ParkingLot, an adaptive spin once woken; fair: a spin while nobody is
// queued first; a release wakes only when nobody woken is already coming).
// Memory: a QueuedSynchronizer (~1.2 KiB with its statistics; the owner and
// hold count fill its word line's padding); a Condition is three words; an
// awaiting thread keeps its node on its stack.
//
// How it works
// ------------
// Java builds ReentrantLock and Semaphore on one queue (AQS), and so does
// locklab: the lock is a QueuedSynchronizer with one permit and the chosen
// fairness (primitives/queued_synchronizer.hpp), which provides the queue,
// the parking, barging or FIFO order, timeouts and statistics; this class
// adds ownership:
//   owner        the holding thread's id, or none (atomic, see below)
//   extra_holds  the hold count minus 1 while held, (plain: only the owner
//                0 otherwise                        reads or writes it)
// Both sit in the synchronizer's owner slot, on the permit word's cache
// line, as AQS keeps exclusiveOwnerThread beside its state: a hand-over
// moves one line between cores, not two.
// lock() first asks "do I already own it?" (owner == this thread; the
// owner sits on the permit word's line, so the question reads no other
// line) and if so just increments extra_holds, with no read-modify-write;
// otherwise it takes the permit (one fetch_sub, or the synchronizer's
// queue) and then records itself as owner. (try_lock() asks in Java's
// order, the permit first.) unlock() checks ownership; if extra_holds is
// not 0 it decrements it, else it clears owner *before* giving the permit
// back. Counting the holds beyond the first means a first lock() and a
// final unlock() never write the count: it is 0 then, as the previous
// final unlock() left it. Measured with 200 ns sections on the AMD
// reference VM, 10 rounds alternating the two builds (1-64 waiters), that
// store pair cost 2-5% of ReentrantLock's throughput, about half of its
// gap to AdaptiveMutex there (see the reference README).
// A Condition is a FIFO list of nodes on the awaiting threads' stacks, each
// with its own futex word (a ConditionQueue, primitives/condition_queue.hpp,
// shared with ReentrantReadWriteLock); the list is guarded by the lock
// itself (only the holder touches it). signal() unlinks the head node and sets its word while
// still holding the lock; the awaiter cannot return (and so destroy its
// node) before it re-acquires the lock, i.e. before the signaller has
// finished with the node. A timed-out awaiter re-acquires the lock first,
// then looks at its node: set means a signal came first (return true),
// otherwise it unlinks itself (return false); holding the lock makes that
// decision race-free.
//
// Memory orders
// -------------
// - The permit's acquire/release compare-exchanges (queued_synchronizer.hpp)
//   provide all the happens-before between critical sections.
// - owner is relaxed everywhere. The only question asked of it is "is it
//   me?". A thread reads its own id there only if it stored it itself and has
//   not cleared it since: every other writer stores a *different* id or
//   none, and a thread always observes its own latest store or something
//   later in the word's modification order (read-after-write coherence).
//   So the answer to "is it me?" is exact without any ordering. (This is
//   AQS's argument for a plain exclusiveOwnerThread field.) A thread whose
//   id is not there, but that will be the next owner, is not yet the owner.
// - extra_holds is a plain integer: written and read only by the owner, and
//   the permit's release/acquire orders one owner's accesses before the
//   next's (so the next owner reads the 0 the last final unlock() left).
// - Condition node words: release store by the signaller, acquire load by
//   the awaiter (the lock re-acquisition orders everything else).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "primitives/condition_queue.hpp"
#include "primitives/deadline.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab {

class ReentrantLock {
 public:
  class Condition;

  // Post: unlocked, no owner. Fairness::kUnfair is Java's default.
  explicit ReentrantLock(Fairness fairness = Fairness::kUnfair, SpinPolicy policy = SpinPolicy::adaptive())
      : sync_(1, fairness, policy) {}
  // Pre: unlocked and no thread waiting (as for std::mutex).
  ~ReentrantLock() = default;
  ReentrantLock(const ReentrantLock&) = delete;
  ReentrantLock& operator=(const ReentrantLock&) = delete;

  // Acquires the lock, waiting as long as it takes; if this thread already
  // holds it, increments the hold count instead. Post: held by this thread,
  // hold_count() one higher. Does not throw.
  void lock() {
    // The owner first: it sits on the permit word's line, so reading it
    // costs no other line, and a reentrant lock() is then a thread-identity
    // compare and no read-modify-write at all. The permit next, with one
    // fetch_sub (AdaptiveMutex::lock says why not a load and a
    // compare-exchange).
    const std::thread::id self = std::this_thread::get_id();
    if (owner().load(std::memory_order_relaxed) == self) {
      ++extra_holds();
      return;
    }
    if (!sync_.try_acquire_one_by_sub()) sync_.acquire(1);
    become_owner(self);
  }

  // Acquires the lock if it is free now (fair: and nobody is queued), or
  // re-acquires it if this thread holds it; never waits. True on success.
  // Like std::mutex::try_lock it may fail spuriously: while another thread's
  // first try in lock() gives back a permit it found taken, the lock reads
  // as held for those few nanoseconds.
  bool try_lock() {
    if (sync_.try_acquire(1)) {
      become_owner(std::this_thread::get_id());
      return true;
    }
    if (owner().load(std::memory_order_relaxed) != std::this_thread::get_id()) return false;
    ++extra_holds();
    return true;
  }

  // Like lock(), giving up after `timeout` (a single try if <= 0). True on
  // success; a false return comes no earlier than now + timeout.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    const std::thread::id self = std::this_thread::get_id();
    if (owner().load(std::memory_order_relaxed) == self) {
      ++extra_holds();
      return true;
    }
    if (!(timeout <= timeout.zero() ? sync_.try_acquire(1)
                                    : sync_.acquire_until(1, detail::steady_deadline_after(timeout)))) {
      return false;
    }
    become_owner(self);
    return true;
  }

  // Like try_lock_for with an absolute deadline (a past one: single try).
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    const std::thread::id self = std::this_thread::get_id();
    if (owner().load(std::memory_order_relaxed) == self) {
      ++extra_holds();
      return true;
    }
    if (!sync_.acquire_until(1, detail::to_steady_deadline(deadline))) return false;
    become_owner(self);
    return true;
  }

  // Pre: held by this thread. Decrements the hold count; at zero releases
  // the lock (waking a waiter if any). Throws std::system_error
  // (std::errc::operation_not_permitted), changing nothing, if this thread
  // does not hold the lock.
  void unlock() {
    if (owner().load(std::memory_order_relaxed) != std::this_thread::get_id()) throw_not_owner("unlock");
    if (extra_holds() != 0) {
      --extra_holds();
      return;
    }
    owner().store(std::thread::id(), std::memory_order_relaxed);
    sync_.release(1);
  }

  // This thread's holds: 0 if it does not hold the lock (Java getHoldCount).
  std::int64_t hold_count() const noexcept { return is_held_by_current_thread() ? extra_holds() + 1 : 0; }
  // Exact for the calling thread (see "Memory orders").
  bool is_held_by_current_thread() const noexcept {
    return owner().load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // Whether some thread holds the lock (or, fair mode, it is being handed to
  // a woken waiter). A snapshot, for monitoring, not for synchronisation.
  bool is_locked() const noexcept { return sync_.available() <= 0; }
  bool is_fair() const noexcept { return sync_.is_fair(); }
  // Threads waiting to acquire (not those awaiting a Condition). Snapshots.
  bool has_queued_threads() const noexcept { return sync_.queue_length() != 0; }
  std::int64_t queue_length() const noexcept { return sync_.queue_length(); }

  // Slow-path statistics of the lock's queue (contended acquires, polls
  // spun, parks, wakes). The uncontended path records nothing.
  LockStatsSnapshot stats() const noexcept { return sync_.stats(); }

  // A new condition variable bound to this lock (Java's newCondition()).
  // Returned by value (guaranteed copy elision); not copyable or movable.
  Condition new_condition();

 private:
  // extra_holds() is already 0: the last final unlock() left it so.
  void become_owner(std::thread::id self) noexcept { owner().store(self, std::memory_order_relaxed); }
  [[noreturn]] static void throw_not_owner(const char* what);

  QueuedSynchronizer sync_;  // 1 permit = unlocked
  // The owner and hold count live on the permit word's cache line (the
  // synchronizer's owner slot): one line moves at a hand-over, not two.
  // Only the owner writes them; only the owner reads the hold count.
  std::atomic<std::thread::id>& owner() noexcept { return sync_.owner_slot(); }
  const std::atomic<std::thread::id>& owner() const noexcept { return sync_.owner_slot(); }
  std::int64_t& extra_holds() noexcept { return sync_.hold_count_slot(); }
  std::int64_t extra_holds() const noexcept { return sync_.hold_count_slot(); }
  static_assert(std::atomic<std::thread::id>::is_always_lock_free);
};

class ReentrantLock::Condition {
 public:
  explicit Condition(ReentrantLock& lock) noexcept : lock_(lock) {}
  // Pre: no thread awaits on this condition.
  ~Condition();
  Condition(const Condition&) = delete;
  Condition& operator=(const Condition&) = delete;

  // Pre: the caller holds the lock (else std::system_error,
  // operation_not_permitted, nothing changes). Releases the lock fully,
  // waits for signal()/signal_all(), re-acquires the lock with the same hold
  // count. Post: held by the caller with hold_count() as before.
  void await() { (void)await_until_steady(std::chrono::steady_clock::time_point::max()); }

  // As await(), giving up at now + timeout. True if signalled, false if the
  // time ran out first (a false return comes no earlier than the deadline).
  // timeout <= 0: returns false at once and leaves the lock alone (after
  // the ownership check). Post, either way: as await().
  template <class Rep, class Period>
  bool await_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (timeout <= timeout.zero()) return expired_now();
    return await_until_steady(detail::steady_deadline_after(timeout));
  }

  // As await_for, with an absolute deadline.
  template <class Clock, class Duration>
  bool await_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return await_until_steady(detail::to_steady_deadline(deadline));
  }

  // Pre: the caller holds the lock (else std::system_error). Wakes the
  // longest-waiting awaiter, if any; it returns from await once it gets the
  // lock back (after the caller releases it).
  void signal();
  // Same precondition. Wakes every current awaiter.
  void signal_all();

  // Pre: the caller holds the lock (else std::system_error). Awaiters not
  // yet signalled (Java's hasWaiters / getWaitQueueLength).
  bool has_waiters() const;
  std::int64_t wait_queue_length() const;

 private:
  bool await_until_steady(std::chrono::steady_clock::time_point deadline);
  bool expired_now() const;
  void check_held(const char* what) const;

  ReentrantLock& lock_;
  ConditionQueue queue_;  // guarded by lock_ (only its holder touches it)
};

inline ReentrantLock::Condition ReentrantLock::new_condition() { return Condition(*this); }

}  // namespace locklab
