// reentrant_read_write_lock.hpp — java.util.concurrent.locks.
// ReentrantReadWriteLock: many readers or one writer, both reentrant, a
// writer may take the read lock and then let the write lock go (downgrade),
// and Conditions on the write lock.
//
// What it guarantees
// ------------------
// State, as seen by a thread T (r = T's read holds, w = T's write holds):
//
//   state                       T: read_lock()      T: write_lock()        T: read_unlock / write_unlock
//   free                        r = 1               w = 1, owner = T       throws (not held)
//   read by others, not T       r = 1 (may wait,    waits                  throws (not held)
//                               see fairness)
//   read by T (r >= 1), w = 0   r + 1, no wait      throws (upgrade)       r - 1 / throws
//   written by T (w >= 1)       r + 1, no wait      w + 1                  r - 1 / w - 1; at w = 0
//                                                                          the write lock is free and
//                                                                          T keeps its reads (downgrade)
//   written by U != T           waits               waits                  throws (not held)
//
// - Readers share, a writer excludes: while a thread holds the write lock no
//   other thread holds either lock. Every write_unlock() that frees the
//   write lock happens-before every later acquisition (read or write), and
//   every read_unlock() happens-before the next write_lock() that follows
//   it. Readers among themselves get no ordering (they only read).
// - Reentrancy, both sides: a thread re-takes a lock it holds without
//   waiting, however many writers are queued (a reentrant read that queued
//   behind a waiting writer would deadlock with it), and must unlock as
//   many times. Hold counts are 64-bit.
// - Downgrade: the writer may read_lock() (no wait), then write_unlock();
//   it keeps reading, and no writer can slip in between (the read permit is
//   carved out of the write's, not re-acquired).
// - Upgrade is refused: write_lock() (or any try/timed variant) by a thread
//   that holds the read lock but not the write lock throws
//       std::system_error with std::errc::resource_deadlock_would_occur
//   and changes nothing. Java lets that call wait forever (two upgrading
//   readers wait for each other; one alone waits for itself); the standard
//   library reports a self-deadlock it can see with the same error code
//   (std::mutex::lock, std::thread::join), so we do.
// - Ownership is checked, as in ReentrantLock: write_unlock() by a thread
//   that does not hold the write lock, read_unlock() by a thread that holds
//   no read, and any use of a Condition without the write lock throw
//       std::system_error with std::errc::operation_not_permitted
//   and change nothing.
// - Fairness, chosen at construction:
//     kFair    Writers in arrival order, readers in phases between them.
//              Writers are served FIFO among themselves. A reader waits
//              for the writers announced before it (waiting or writing
//              when it arrived) and for no reader: while no writer is
//              announced a new reader enters at once, even past parked
//              readers (there are none then but woken ones). Once a writer is announced no
//              new read gets in before it (try_ variants included;
//              re-entry excepted), so a writer waits only for the readers
//              already inside and the writers ahead of it: a continuous
//              stream of new readers cannot starve it (tested, strictly).
//              When a writer lets the lock go it wakes every reader that
//              waited for it, all at once; they enter with any reader that
//              comes, until the next writer is announced and has the
//              readers inside drain. What readers do not get: a reserved
//              place. A woken reader that the scheduler has not run by the
//              time the next writer takes the lock waits for that writer
//              too (and so, after a timed writer gives up, may a reader
//              that counted it). So a reader can be overtaken by writers
//              announced after it, while it is not running; a writer is
//              never overtaken by a read that began after it was
//              announced.
//     kUnfair  (default, Java's too) Barging: readers and writers take the
//              lock whenever it is free enough for them, ahead of queued
//              threads, until a writer heads the queue. A writer that must
//              wait spins (the adaptive budget), then queues; the next
//              release wakes the head of the queue, and a writer woken
//              there stops new readers at once (the synchronizer's
//              starving flag, QueuedSynchronizer::
//              stop_barging_behind_a_woken_exclusive) while the readers
//              inside drain. The bound on writer starvation is therefore
//              one release plus the writer's wake-up plus the longest read
//              section already inside, not zero (tested: a writer gets in
//              under a continuous read stream). A reader at the head
//              stops the barging only after 2 ms awake (the
//              synchronizer's kStarvationInterval): it waits for a writer's
//              section only.
//   This is Java's policy (apparentlyFirstQueuedIsExclusive: an unfair
//   reader that is not re-entering waits while a writer is first in the
//   queue), give or take the wake-up: ours still admits readers while the
//   queued writer is being woken, Java's refuses them from the moment the
//   writer has queued. An earlier version let readers barge for the whole
//   1 ms past a woken writer (to keep the readers' throughput under bursts
//   of writers); that measured slower at most points (see "Unfair
//   admission, measured" below).
// - Timeouts: the try_*_for / try_*_until variants measure on
//   std::chrono::steady_clock; zero, negative or past is one try; a false
//   return comes no earlier than the deadline.
//
// Interfaces. lock() / try_lock() / try_lock_for / try_lock_until / unlock()
// are the write lock and lock_shared() / try_lock_shared() /
// try_lock_shared_for / try_lock_shared_until / unlock_shared() the read
// lock, std::shared_timed_mutex's names, so std::unique_lock,
// std::shared_lock and std::scoped_lock work. read_lock() / write_lock()
// and friends are the same calls under Java's names.
//
// Conditions. `ReentrantReadWriteLock::Condition c = rw.new_condition();` is
// a Condition on the write lock with exactly ReentrantLock::Condition's
// contract (await releases every write hold and restores them, FIFO signal,
// no spurious wake-up, timed variants; the same ConditionQueue underneath,
// primitives/condition_queue.hpp). One addition: await by a writer
// that also holds read locks throws resource_deadlock_would_occur, because
// re-taking the write lock after the wait would wait for its own reads
// (Java's readers cannot have Conditions at all; its writer that also reads
// and awaits loses its reads' accounting).
//
// Thread identity. As for ReentrantLock: holds belong to the OS thread; a
// task that moves between threads while holding either lock breaks the
// lock's bookkeeping (fibers/ has locks that name a fiber instead).
//
// How it works, and why on the QueuedSynchronizer
// -----------------------------------------------
// The lock is a QueuedSynchronizer with kAllPermits (2^59 - 1) permits: a
// reading thread takes 1, the writer takes all of them. So the
// synchronizer's shared mode already is a read-write lock: "readers share"
// is permits >= 1, "a writer excludes everyone" is permits == all, and the
// synchronizer's rules give the rest for free:
//   - "a large request at the head blocks smaller ones behind it" is
//     exactly "readers queued behind a writer wait for it";
//   - unfair mode's starvation flag (a woken writer at once, any other
//     head after 2 ms awake, stops the barging) is the bound on writer
//     starvation;
//   - a release of all permits serves every reader queued behind (the
//     designated successor hands the designation on while permits remain,
//     AQS's propagate);
//   - parking, timeouts, FIFO, the one-awake-successor rule, statistics.
// That is the unfair mode. Fair mode keeps the permits and queues its
// writers in the (fair) synchronizer, but not its readers: the
// synchronizer's fair queue wakes its threads one at a time, which made a
// convoy of them; fair readers wait at a gate of this class's instead (see
// "Fair mode" below).
// The alternative, a reader count and a writer bit in a word of our own
// parked directly on the ParkingLot (as the synchronizer itself is built),
// would re-write all of that, and its lost-wake-up argument, for one more
// state machine; extending the synchronizer with a separate shared mode
// (AQS's acquireShared) would add a second protocol to its word. The price
// of the reuse: a reading thread is one permit, so at most 2^59 - 1
// threads read at once (Java's limit is 65,535), and a reader's acquire is
// a read-modify-write of the same line every reader touches (the contended
// reader count every non-distributed read-write lock has; see the benches).
// That read-modify-write is one fetch_sub, not a compare-exchange loop:
// readers take one permit each, so they subtract blindly and check what
// they found (QueuedSynchronizer::try_acquire_one_by_sub; a dip that should
// not have happened is added back, waking anyone it held off), and give it
// back with one fetch_add. Under reader contention a compare-exchange fails
// whenever another reader moved the word in between and must go round
// again; a fetch_sub always completes. Measured on the 2-core lab VM
// (paired runs against std::shared_mutex, benches/paired_compare.py on the
// rwlocks suite at 100% and 99% reads, 1-16 waiters): with a load plus a
// compare-exchange per acquire and per release, and the read-hold list
// behind a guarded thread_local, the unfair lock ran at 0.73-0.86x
// std::shared_mutex (glibc's rwlock: one fetch_add each way); with the
// fetch_sub/fetch_add pair and the cached slot below, at 1.07-1.23x.
//
// Fair mode: a writers word and a gate for readers
// -------------------------------------------------
// The synchronizer's own fair mode (a newcomer waits while anyone is
// queued; queued threads are woken one at a time) made a convoy of the
// readers: at 99% reads with more waiters than cores some writer was
// nearly always queued, every new reader queued behind it, and queued
// readers were woken one by one, each woken reader waking the next, so
// nearly every read became a park and a wake-up, and new readers kept
// joining the queue behind the next writer before it had emptied. On the
// rwlocks suite (2-core VM, empty sections, 90% and 99% reads) that ran at
// 0.03-0.3x std::shared_mutex from 4 waiters up, 0.01-0.4 parks per
// operation. So in fair mode:
//   - writers still queue in the fair synchronizer (FIFO among them), but
//     first announce themselves in writers_, a word of two 32-bit counts:
//     writers pending (announced, waiting or writing) and write phases
//     completed. A writer adds one pending before it asks for the permits,
//     and when it lets them go turns its pending into one completed phase
//     with a single fetch_add (a writer that gives up only subtracts its
//     pending);
//   - a reader whose load of writers_ shows no writer pending takes its
//     permit with the fast path's fetch_sub, ignoring the synchronizer's
//     queue (QueuedSynchronizer::try_acquire_one_by_sub_out_of_turn: the
//     queue holds writers only, and the permit count still keeps a writer
//     that holds the lock out). Otherwise its target is the phase of the
//     last writer announced (completed + pending); it parks at once
//     (kGateSpinPolls is 0; the .cpp gives the measurement) at the gate: one
//     of kGateSlots parking-lot addresses (target % kGateSlots), validated
//     under the lot's bucket lock ("my phase is not completed, and enough
//     writers are pending to complete it");
//   - a writer's release completes its phase, gives all its permits back
//     to the synchronizer, and wakes every reader parked at that phase's
//     slot with one unpark each; they take their permits as newcomers do.
//     (A reader woken for another phase that shares its slot, possible
//     only with kGateSlots writers pending, parks again.)
// Why the writer does not hand each woken reader its permit, as AQS's
// propagation in effect does: that was measured first, and the next
// writer then waited for every woken reader to be scheduled, run its
// section and leave, while every new reader waited behind that writer;
// with more threads than cores a woken thread waits for a core
// (milliseconds under load), so the lock sat held by readers that were
// not running. On the rwlocks suite (2-core VM shared with other builds,
// empty sections, 90% and 99% reads, 4-64 waiters, paired runs) granting
// ran at 0.01-0.23x std::shared_mutex with writer wait p99 up to 2.9 ms;
// waking without granting, at 0.9-1.5x up to 16 waiters and 0.55-0.95x at
// 64, writer wait p99 under 1 us, parks per operation under 0.007. The
// price is the weaker promise to readers described under "Fairness".
// The lost-wake-up argument: a reader sets its slot's bit, then validates
// under the slot's bucket lock; a writer completes its phase, then reads
// the bit (all seq_cst). Either the reader's validation sees the phase
// completed (it does not sleep) or the writer sees the bit and its unpark
// loop, which takes the same bucket lock, finds the reader queued; the
// loop's last wake clears the bit under that lock. A writer that gives up
// wakes every slot with "look again" after its fetch_sub; a reader that
// read the count before it fails the "enough pending" validation.
// The cost, honestly: fair readers wait whenever a writer is announced
// (that is what bounds the writer's wait; std::shared_mutex, which lets
// readers pass a waiting writer, never makes them): a spin, and if the
// write phase outlasts it a park and a wake-up; a releasing writer pays
// one unpark (bucket lock and futex wake) per reader parked for it; every
// fair write pays two more read-modify-writes (writers_: announce and
// complete) and a load of the gate's bits; every fair read, one more load
// (writers_, on a line that writers and parking readers write). Unfair
// mode does none of this.
//
// What this class adds on top is the bookkeeping Java keeps in ThreadLocal
// HoldCounters:
//   owner, write holds  the writer's id and hold count, in the
//                       synchronizer's owner slot (ReentrantLock's layout);
//   read holds          per thread, per lock: the first lock a thread
//                       reads in a cached thread-local slot (Java's
//                       cachedHoldCounter), the others in a thread-local
//                       list of (lock, count, permit) records
//                       (reentrant_read_write_lock.cpp); a record exists
//                       only while the count is > 0. `permit` says whether
//                       the hold owns a synchronizer permit (false for a
//                       writer's reads until the downgrade).
// Only a thread's *first* read hold takes a permit and only its last gives
// it back, so a reentrant read is thread-local work: it touches no shared
// line and cannot queue behind a writer. A writer's first read hold takes
// no permit either: the writer has all of them, and when its last write
// hold goes it gives back all but one (the downgrade). A read_unlock that
// ends a writer's reads gives nothing back, for the same reason.
//
// Unfair admission, measured. On the 2-core lab VM, with empty sections,
// the JVM's unfair lock runs at 4-128 waiters in a regime where one thread
// runs and the others sleep in the queue (cpu/wall ~1.05, ~50 M ops/s at
// 99% reads), apparently because its readers queue behind a queued
// writer; ours, with 1 ms of reader barging, kept two threads fighting over
// the reader count at 2-4 waiters (cpu/wall ~2.0, ~14 M ops/s) and reached
// only 38-43 M ops/s at 16-128. Two changes were measured A/B against the
// previous version (bench_rwlocks, read_cs_ns 0, 99/90/50% reads, 1-128
// waiters, 300 ms points, medians of interleaved runs; the machine was
// loaded by other builds, so ratios within a session, not absolute
// speeds, are the result, and they are noisy):
//   - a read unlock no longer compare-exchanges the word with itself when
//     a woken successor is awake (QueuedSynchronizer::release_one_by_add):
//     with more threads than cores a woken thread may wait a time slice
//     for a core, and meanwhile every read unlock paid a second
//     read-modify-write (alone: 0.75-2.8x, mostly above 1.4x, at 16-128
//     waiters and 99% reads in three sessions);
//   - a woken writer stops new readers at once (above).
// Both together, three sessions (4, 3 and 5 runs): at 99% reads
// 0.94-1.21x at 1-2 waiters and 1.13-2.13x at 4-128; at 90% 0.98-1.86x;
// at 50% 1.06-1.48x, 0.68-1.53x (2 and 128 waiters below 1) and
// 1.04-1.35x. Threads parked 2-14x less often per operation at 4-128
// waiters and 99% reads in the first and third sessions (e.g. 6.9e-5 ->
// 5.0e-6 at 4), mixed in the second (2.9x more at 64); the writer's
// sampled lock() p99 stayed sub-microsecond. Tried and not kept
// (better in one session, worse in another): writers and readers that park
// without spinning (Java's AQS barely spins), and readers that do not spin
// while a writer is starving. Whether this reaches the JVM's one-runner
// regime at 4 waiters on a quiet machine is for the reference run to show;
// a loaded machine cannot (no thread there has a core to itself).
//
// What it costs
// -------------
// Uncontended write lock/unlock: ReentrantLock's (one compare-exchange
// each, two plain stores of the owner slot), plus one look-up of the
// thread's read holds at the last write_unlock() (did it downgrade?) and on
// the contended lock path (the upgrade check).
// Read lock/unlock, the usual case (a thread reading one lock at a time):
// inline, two thread-local loads of the cached slot, plus, for the first
// hold, one fetch_sub on the synchronizer's word (the last unlock: one
// fetch_add; if the word has a waiter flag, release()'s waking as well); a
// re-entry is a thread-local increment. A thread reading several locks at
// once goes out of line for the others: a scan of its list, and the
// synchronizer's compare-exchange acquire. Fair mode adds the costs listed
// under "Fair mode" above. Memory: a QueuedSynchronizer (~1.2 KiB with
// statistics) per lock, plus the writers word, the gate and its
// statistics (~1.2 KiB more), 24 bytes per (thread, lock) pair being read;
// a Condition is three words.
//
// Memory orders
// -------------
// - Between critical sections: the synchronizer's acquire/release
//   read-modify-writes (a reader's release fetch_add continues to the next
//   writer's acquire compare-exchange, which reads the word it wrote, or a
//   later value of its release sequence; the writer's release of all
//   permits to every later reader's acquire fetch_sub). A dip that is
//   added back made no hold, so its orders do not matter beyond the
//   read-modify-write itself.
// - owner is relaxed, with ReentrantLock's argument: the only question asked
//   of it is "is it me?", which read-after-write coherence answers exactly.
// - write holds and the thread-local read holds are plain integers: the
//   first is touched only by the owner (ordered between owners by the
//   permits), the second only by its own thread.
// - Condition node words: release store by the signaller, acquire load by
//   the awaiter (ReentrantLock's).
// - Fair mode: writers_ and the gate's bits are seq_cst (the lost-wake-up
//   argument above is a store-load pattern on two words). writers_ only
//   decides who may try: the permits in the synchronizer's word still
//   decide who gets in, so a reader that read writers_ a moment before a
//   writer announced itself (a race of a few instructions) enters as if it
//   had arrived first, and the writer waits for it like any reader inside.
//
// What is invalid (undefined, not checked): destroying the lock while a
// thread holds or waits for it (a thread's leftover read-hold entry would
// also alias a new lock at the same address); a thread that exits while
// holding either lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "primitives/cache_line.hpp"
#include "primitives/condition_queue.hpp"
#include "primitives/deadline.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab {

namespace detail {
// One read hold record: a thread's hold count on one lock, and whether the
// hold owns a permit (false for a writer's reads, carved out of its write
// permits, until the writer lets the write go: the downgrade). The first
// lock a thread reads lives in its cached slot below; further ones in a
// thread-local list (reentrant_read_write_lock.cpp). Trivial types with
// constant initialisation, so a thread_local access is one %fs-relative
// load, with no guard call, from any translation unit.
struct ReadHoldRecord {
  const void* lock = nullptr;
  std::int64_t count = 0;
  bool permit = false;
};
inline thread_local constinit ReadHoldRecord t_cached_read_hold{};
inline thread_local constinit std::uint32_t t_listed_read_holds = 0;  // entries in the list
}  // namespace detail

class ReentrantReadWriteLock {
 public:
  class Condition;

  // The writer's share of the synchronizer's permits; a reading thread
  // holds one.
  static constexpr std::int64_t kAllPermits = QueuedSynchronizer::kMaxPermits;

  // Post: free. Fairness::kUnfair is Java's default.
  explicit ReentrantReadWriteLock(Fairness fairness = Fairness::kUnfair, SpinPolicy policy = SpinPolicy::adaptive())
      : sync_(kAllPermits, fairness, policy) {
    sync_.stop_barging_behind_a_woken_exclusive();  // unfair readers: Java's policy (the essay)
  }
  // Pre: nobody holds or waits for the lock.
  ~ReentrantReadWriteLock() = default;
  ReentrantReadWriteLock(const ReentrantReadWriteLock&) = delete;
  ReentrantReadWriteLock& operator=(const ReentrantReadWriteLock&) = delete;

  // ---- the write lock -------------------------------------------------

  // Takes the write lock, waiting as long as it takes; a writer re-entering
  // adds a hold. Throws std::system_error(resource_deadlock_would_occur),
  // changing nothing, if this thread holds a read lock and not the write
  // lock (an upgrade).
  void lock() {
    const bool fair = sync_.is_fair();
    // Fair: no try before the announcement (see the essay), so the
    // re-entry and upgrade checks come first.
    if (!fair && sync_.try_acquire(kAllPermits)) return become_owner(std::this_thread::get_id());
    const std::thread::id self = std::this_thread::get_id();
    if (reenter_write(self)) return;
    acquire_write_permits();
    become_owner(self);
  }

  // The write lock if it can be had now (fair: and nobody is queued), or a
  // re-entry; never waits. Throws like lock() on an upgrade.
  bool try_lock() {
    if (!sync_.is_fair()) {
      if (sync_.try_acquire(kAllPermits)) {
        become_owner(std::this_thread::get_id());
        return true;
      }
      return reenter_write(std::this_thread::get_id());
    }
    const std::thread::id self = std::this_thread::get_id();
    if (reenter_write(self)) return true;
    if (!try_acquire_write_permits_fair()) return false;
    become_owner(self);
    return true;
  }

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (timeout <= timeout.zero()) return try_lock();
    return write_lock_until(detail::steady_deadline_after(timeout));
  }

  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return write_lock_until(detail::to_steady_deadline(deadline));
  }

  // Drops one write hold; the last one frees the write lock (this thread
  // keeps whatever read holds it has). Throws
  // std::system_error(operation_not_permitted), changing nothing, if this
  // thread does not hold the write lock.
  void unlock() {
    if (owner().load(std::memory_order_relaxed) != std::this_thread::get_id()) throw_not_held("write_unlock");
    if (--holds() != 0) return;
    owner().store(std::thread::id(), std::memory_order_relaxed);
    // A downgraded writer keeps one permit as its read (see the essay);
    // its read hold now owns that permit.
    release_write_permits(mark_downgraded_read() ? kAllPermits - 1 : kAllPermits);
  }

  // ---- the read lock --------------------------------------------------

  // Takes a read hold: waits only for this thread's first hold, and only
  // while a writer (another thread) holds the lock or, in fair mode, a
  // writer announced before this read is still to be served; unfair: also
  // while a starving writer is being served.
  //
  // Fast path (inline): a thread's first read hold on a lock, when it reads
  // no other lock, is recorded in its cached slot and takes its permit with
  // one fetch_sub (QueuedSynchronizer::try_acquire_one_by_sub; fair: after
  // one load of the writers word, which must show no announced writer); a
  // re-entry on that lock is one thread-local increment. Anything else goes
  // out of line.
  void lock_shared() {
    detail::ReadHoldRecord& c = detail::t_cached_read_hold;
    if (c.lock == this) {
      ++c.count;
      return;
    }
    if (c.lock == nullptr && detail::t_listed_read_holds == 0 && take_read_permit_now()) {
      c = {this, 1, true};
      return;
    }
    lock_shared_slow();
  }
  // A read hold if it can be had now; never waits.
  bool try_lock_shared();

  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (timeout <= timeout.zero()) return try_lock_shared();
    return read_lock_until(detail::steady_deadline_after(timeout));
  }

  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return read_lock_until(detail::to_steady_deadline(deadline));
  }

  // Drops one read hold; the thread's last one gives its permit back.
  // Throws std::system_error(operation_not_permitted), changing nothing, if
  // this thread holds no read lock.
  void unlock_shared() {
    detail::ReadHoldRecord& c = detail::t_cached_read_hold;
    if (c.lock == this && c.count == 1 && c.permit) {
      c = {};
      sync_.release_one_by_add();
      return;
    }
    unlock_shared_slow();
  }

  // Java's names for the same calls.
  void write_lock() { lock(); }
  bool try_write_lock() { return try_lock(); }
  void write_unlock() { unlock(); }
  void read_lock() { lock_shared(); }
  bool try_read_lock() { return try_lock_shared(); }
  void read_unlock() { unlock_shared(); }

  // ---- queries (snapshots, for monitoring and tests) -------------------

  // This thread's holds (Java getReadHoldCount / getWriteHoldCount).
  std::int64_t read_hold_count() const noexcept;
  std::int64_t write_hold_count() const noexcept { return is_write_locked_by_current_thread() ? holds() : 0; }
  // Exact for the calling thread (the owner argument of the essay).
  bool is_write_locked_by_current_thread() const noexcept {
    return owner().load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // Whether some thread holds the write lock.
  bool is_write_locked() const noexcept { return owner().load(std::memory_order_relaxed) != std::thread::id(); }
  // Threads holding a read lock now (each counted once, however many holds
  // it has; a downgrading writer is counted once it has let the write go).
  std::int64_t reading_threads() const noexcept {
    return is_write_locked() ? 0 : kAllPermits - sync_.available();
  }
  bool is_fair() const noexcept { return sync_.is_fair(); }
  // Threads waiting: writers queued in the synchronizer and (fair) readers
  // parked at the gate.
  bool has_queued_threads() const noexcept { return queue_length() != 0; }
  std::int64_t queue_length() const noexcept {
    return sync_.queue_length() + gate_waiting_.load(std::memory_order_relaxed);
  }
  // Slow-path statistics: the synchronizer's, plus (fair) the gate's:
  // a reader's wait at the gate is a contended acquire (its polls are
  // spins, its sleeps parks), each reader a writer wakes is a wake.
  // Uncontended paths record nothing.
  LockStatsSnapshot stats() const noexcept {
    LockStatsSnapshot s = sync_.stats();
    const LockStatsSnapshot g = gate_stats_.snapshot();
    s.contended_acquires += g.contended_acquires;
    s.spins += g.spins;
    s.parks += g.parks;
    s.wakes += g.wakes;
    s.handoffs += g.handoffs;
    s.dozes += g.dozes;
    return s;
  }

  // A condition variable on the write lock.
  Condition new_condition();

 private:
  void become_owner(std::thread::id self) noexcept {
    owner().store(self, std::memory_order_relaxed);
    holds() = 1;
  }
  // The write lock's slow checks: re-entry (true: one more hold), upgrade
  // (throws), else false (the caller waits).
  bool reenter_write(std::thread::id self) {
    if (owner().load(std::memory_order_relaxed) == self) {
      ++holds();
      return true;
    }
    if (read_hold_count() > 0) throw_upgrade();
    return false;
  }
  bool write_lock_until(std::chrono::steady_clock::time_point deadline);

  // ---- fair mode's writers word and reader gate (see the essay) ----
  // writers_: low 32 bits the writers announced and not yet done
  // (waiting or writing), high 32 bits the write phases completed (mod
  // 2^32). A fair writer adds kOnePending before it asks the synchronizer,
  // and completes with one fetch_add of kOneCompletion - kOnePending (one
  // fewer pending, one more completed) when it lets the write lock go, or
  // subtracts kOnePending if it gives up.
  static constexpr std::uint64_t kOnePending = 1;
  static constexpr std::uint64_t kOneCompletion = std::uint64_t{1} << 32;
  // Readers park at gate slot (target % kGateSlots), target being the write
  // phase they wait for. One slot would do for correctness (a reader woken
  // for another phase hands its permit back and parks again); eight make
  // that wasted wake-up need eight writers announced at once.
  static constexpr unsigned kGateSlots = 8;
  static std::uint32_t pending_writers(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w); }

  // The first read permit of the inline fast path.
  bool take_read_permit_now() noexcept {
    if (!sync_.is_fair()) return sync_.try_acquire_one_by_sub();
    return pending_writers(writers_.load(std::memory_order_seq_cst)) == 0 &&
           sync_.try_acquire_one_by_sub_out_of_turn();
  }
  // The writer's permits, waiting; fair: announced first.
  void acquire_write_permits() {
    if (sync_.is_fair()) writers_.fetch_add(kOnePending, std::memory_order_seq_cst);
    sync_.acquire(kAllPermits);
  }
  // Gives back n of the writer's permits (all, or all but a downgraded
  // read's); fair: completes the write phase and wakes the readers that
  // waited for it.
  void release_write_permits(std::int64_t n) noexcept {
    if (!sync_.is_fair()) return sync_.release(n);
    release_write_permits_fair(n);
  }
  bool try_acquire_write_permits_fair() noexcept;
  void release_write_permits_fair(std::int64_t n) noexcept;
  void withdraw_writer() noexcept;
  std::int64_t wake_gate_slot(unsigned slot, std::intptr_t token) noexcept;
  // A fair reader's first permit, waiting at the gate until `deadline`
  // (time_point::max(): no deadline); false only when the deadline passed.
  bool read_permit_fair(std::chrono::steady_clock::time_point deadline) noexcept;
  const void* gate_slot(unsigned slot) const noexcept { return &gate_slots_[slot]; }

  void lock_shared_slow();
  void unlock_shared_slow();
  // At the last write unlock: marks this thread's read hold on this lock (if
  // any) as owning a permit; true if there was one.
  bool mark_downgraded_read() noexcept;
  bool read_lock_until(std::chrono::steady_clock::time_point deadline);

  [[noreturn]] static void throw_not_held(const char* what);
  [[noreturn]] static void throw_upgrade();

  QueuedSynchronizer sync_;  // kAllPermits = free, 0 = written
  // Fair mode only (unfair never touches them). On a line of their own:
  // every fair reader's fast path loads writers_, and only writers (and the
  // gate's slow paths) write this line.
  alignas(kCacheLineSize) std::atomic<std::uint64_t> writers_{0};
  std::atomic<std::uint32_t> gate_parked_{0};    // bit i: readers may be parked at gate slot i
  std::atomic<std::int64_t> gate_waiting_{0};    // readers parked at the gate (queue_length())
  char gate_slots_[kGateSlots] = {};             // their parking addresses; never read or written
  LockStats gate_stats_;
  std::atomic<std::thread::id>& owner() noexcept { return sync_.owner_slot(); }
  const std::atomic<std::thread::id>& owner() const noexcept { return sync_.owner_slot(); }
  std::int64_t& holds() noexcept { return sync_.hold_count_slot(); }
  std::int64_t holds() const noexcept { return sync_.hold_count_slot(); }
};

// ReentrantLock::Condition's contract, on the write lock (see the essay).
class ReentrantReadWriteLock::Condition {
 public:
  explicit Condition(ReentrantReadWriteLock& lock) noexcept : lock_(lock) {}
  // Pre: no thread awaits on this condition.
  ~Condition();
  Condition(const Condition&) = delete;
  Condition& operator=(const Condition&) = delete;

  // Pre: the caller holds the write lock (else std::system_error,
  // operation_not_permitted) and no read lock (else std::system_error,
  // resource_deadlock_would_occur); nothing changes on either error.
  // Releases the write lock fully, waits for a signal, re-acquires it with
  // the same hold count.
  void await() { (void)await_until_steady(std::chrono::steady_clock::time_point::max()); }

  // As await(), giving up at now + timeout; true if signalled. A zero or
  // negative timeout returns false at once, lock untouched (after the
  // checks).
  template <class Rep, class Period>
  bool await_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (timeout <= timeout.zero()) return expired_now();
    return await_until_steady(detail::steady_deadline_after(timeout));
  }

  template <class Clock, class Duration>
  bool await_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return await_until_steady(detail::to_steady_deadline(deadline));
  }

  // Pre: the caller holds the write lock (else std::system_error). FIFO.
  void signal();
  void signal_all();
  bool has_waiters() const;
  std::int64_t wait_queue_length() const;

 private:
  bool await_until_steady(std::chrono::steady_clock::time_point deadline);
  bool expired_now() const;
  void check_held(const char* what) const;

  ReentrantReadWriteLock& lock_;
  ConditionQueue queue_;  // guarded by the write lock
};

inline ReentrantReadWriteLock::Condition ReentrantReadWriteLock::new_condition() { return Condition(*this); }

}  // namespace locklab
