// queued_synchronizer.hpp — one waiting algorithm under every blocking
// primitive: a count of permits in one word, threads that cannot take what
// they need queued in the ParkingLot (primitives/parking_lot.hpp), and at
// most one of them awake at a time. java.util.concurrent builds its locks
// this way on AbstractQueuedSynchronizer; here AdaptiveMutex, ReentrantLock
// and Semaphore are thin shells around one QueuedSynchronizer.
//
// The word
// --------
//   bits 63..4  permits (0..kMaxPermits), signed: try_acquire_one_by_sub's
//               in-flight dips may take it briefly below 0, and a
//               try_release_by_add that overshoots kMaxPermits (the
//               field's largest value) wraps it briefly far below 0
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
//               longer than kStarvationInterval (2 ms), so newcomers may not barge
//               until it has been served (Go's starvation mode); set at
//               once by a woken request for every permit where the shell
//               asked for it (stop_barging_behind_a_woken_exclusive)
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
// The designated successor always may. Anyone else queues: it sets kParked
// and parks in the lot, validated under the lot's bucket lock ("kParked
// still set and I still cannot take"). In unfair mode it does not spin
// first (AQS's rule: only the thread at the head of the queue spins), so
// with more threads than the lock can serve, one runs and the others sleep
// instead of two trading the word's cache line at every acquisition;
// SpinPolicy::newcomers_spin turns the spin back on (while nobody is
// queued) and gives the figures. In fair mode a newcomer spins while nobody
// is queued: it can overtake nobody, so its spin starts no such fight, and
// it saves a park and a wake where the lock is about to come free.
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
// spins its budget, and then sleeps in the successor slot, still first
// (behind a barger in unfair mode it dozes there instead: "A polite
// successor").
// (Letting it spin on as a "lone spinner", SpinPolicy::kLoneSpinPolls, when
// nobody else is queued cost 8% at 2 waiters with 200 ns sections and
// raised cpu_per_wall from 1.2 to 1.5 on the reference Intel VM, for 1-5%
// elsewhere; that allowance is the newcomers_spin policy's.) When
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
// A late successor (unfair mode)
// ------------------------------
// One awake successor means one wake-up in flight, so the queue drains at
// one thread per wake-to-run latency. That latency is microseconds while a
// core is free, but a woken thread that must wait for a core behind busy
// threads waits for a time slice: with 16 threads that mostly work outside
// the lock (100 ns of work per waiter between acquisitions) on the 2-core
// reference Intel VM, the designated successor took 0.5-4 ms from its wake
// to running, the queue drained at about one thread a millisecond, and 8-14
// of the 16 threads sat in it most of the time: a convoy made by the
// scheduler, not by the lock, which is free 95% of the time there. Threads
// that sleep in it do no work, and the cores went idle at times
// (cpu_per_wall 1.64-1.74 against std::mutex's 2.0, which wakes a thread at
// every release that finds waiters). So a successor may be late: once it
// has been woken for kLateSuccessor (50 us, twice the reference VM's p99
// futex wake-to-run latency with a core free, physical_limits'
// FutexWakeToRun) and has not run, the next thread that is about to queue
// first wakes one more queued thread. That thread is not designated (the
// unpark's token says so): it tries again as a newcomer, barging if the
// permits are free, and queues again at the back if not. A timestamp
// compare-exchange lets one thread do this per kLateSuccessor, so it adds
// at most 20,000 wakes a second however many threads queue; on the
// reference VM it took that workload from 1.01 to 1.16 M acquires/s at 16
// waiters (AdaptiveMutex; ReentrantLock 0.96 to 1.14, Semaphore(1) 0.98 to
// 1.13; std::mutex 1.15) and cpu_per_wall to 2.0, and left empty, 200 ns
// and 1 us sections at 2-128 waiters within 3%. Fair mode does not do it: a
// woken thread there cannot pass the late one.
//
// A polite successor (unfair mode)
// --------------------------------
// Call a run of acquisitions by one thread a turn. A turn's first
// acquisition waited for the other threads' turns, tens of milliseconds
// with 128 threads on 2 cores, and the rest of the turn's acquisitions
// wait for nothing. So the share of acquisitions that wait long is one per
// turn, and a p99.9 that stays short needs turns of more than 1,000
// acquisitions. A designated successor that takes the permits at its
// first chance ends a turn at nearly every wake-up: with 1 us sections on
// the reference Intel VM, 0.14-0.33% of the acquisitions waited more than
// 2 ms (every acquire timed), nearly all of them the designated
// successor's, and the p99.9 at 128 waiters read 50-66 ms. So in unfair
// mode, until it is starving, the designated successor
// - takes free permits only once they have stayed free for
//   kPoliteGraceNs (150 ns): a running barger has re-taken them by then, a
//   holder that has left (to think, or to block on something else) has
//   not;
// - once it knows a barger is about (it saw the permits free and then
//   taken, or, waiting for one permit, a release woke it and the permit
//   is taken again when it looks), dozes instead of sleeping where a
//   release would wake it: a timed park in its slot that no release knows
//   of, for kMaxDoze (250 us) or until its starvation deadline, so the
//   barger's releases wake nobody. Then it looks again.
// A turn behind a barger thus ends at the starvation hand-off, in queue
// order, after kStarvationInterval: 2 ms, not the 1 ms of Go's starvation
// mode and WebKit's fair unlock, because a 1 ms turn holds only ~900
// acquisitions with 1 us sections (with 1 ms, a trial of an earlier form
// of this design still read a p99.9 of 34-45 ms at 128 waiters; with 2 ms
// the reference run reads 0-5 us). The price: a barger that leaves while
// the successor dozes leaves the lock free for up to kMaxDoze, with the
// successor asleep (a running thread still takes it at once). What it
// bought on the reference VM is in the reference results' README; at 2
// waiters, for one, the two threads no longer trade the lock at every
// wake-up: 54 to 76 M acquires/s with empty sections, 3.6 to 4.3 with
// 200 ns ones, cpu_per_wall 1.24-1.28 to 1.08-1.10. Fair mode has no
// barger to be polite to.
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
//   order (the lot's order, and the successor keeps its place). Unfair
//   mode: a thread woken beside a late successor may lose its place (it
//   queues again at the back if it cannot barge).
// - Fair mode: a queued thread is overtaken by nobody. Unfair mode: a queued
//   thread may be overtaken by running threads, but once it is the
//   designated successor, at most kStarvationInterval (2 ms, plus scheduling
//   delay) after it was first woken (at once, for a request for every
//   permit where the shell asked) newcomers stop barging until it has its
//   permits.
// - A large request at the head blocks smaller ones behind it (both modes,
//   as in Java): acquire(5) with 3 permits free keeps an acquire(1) queued
//   behind it waiting, although a barging newcomer (unfair) may take them.
//
// What it costs
// -------------
// Uncontended acquire: one relaxed load and one compare-exchange on the
// word (try_acquire), or one fetch_sub (try_acquire_one_by_sub, the mutex
// shells' lock()); uncontended release: one fetch_add. No lot, no clock, no
// statistics. A contended acquire: one park_if (one bucket lock, one
// futex_wait on the thread's own Parker), then, woken, polls of ~20 ns up
// to its budget (fair mode: polls while nobody is queued first); in unfair
// mode, one clock read before it queues while a successor is awake, a
// clock read per poll while the designated successor waits out its grace,
// and a doze (a timed park, stats().dozes) per look behind a barger. A
// release that finds a sleeper to wake: one compare-exchange, one
// unpark_one (bucket lock, a clock read, futex wake). Memory: the word on a
// cache line of its own, the adaptive budget, a waiter count and the
// successor's wake time on the next, and LockStats.
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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"
#include "primitives/parking_lot.hpp"
#include "primitives/spin_policy.hpp"

namespace locklab {

// The queueing discipline of a synchronizer (see "Who may take permits").
enum class Fairness : std::uint8_t { kUnfair, kFair };

// Where a synchronizer's waiters sleep: the ParkingLot's two calls, on an
// object. The algorithm above needs nothing else from it, so the same word
// and rules run over OS threads parked in the kernel (ThreadLot) and over
// fibers suspended on a fiber-aware queue (fibers/park_fiber.hpp): the
// waiting is a parameter, as WebKit's WTF::Lock is generic over its
// parking lot. A Lot must keep park_if()'s and unpark_one()'s contracts
// (parking_lot.hpp): validate() and the callback run under one lock that
// also guards the queue of `address`, and the queue is FIFO.
template <class L>
concept Lot = requires(L& lot, const void* address, detail::FunctionRef<bool()> validate,
                       std::optional<std::chrono::steady_clock::time_point> deadline,
                       detail::FunctionRef<std::intptr_t(UnparkResult)> callback) {
  { lot.park_if(address, validate, deadline) } -> std::same_as<ParkResult>;
  { lot.unpark_one(address, callback) } -> std::same_as<UnparkResult>;
};

// The process-wide ParkingLot: the calling OS thread sleeps in the kernel
// on its own Parker. Stateless, so it costs a synchronizer no memory.
struct ThreadLot {
  ParkResult park_if(const void* address, detail::FunctionRef<bool()> validate,
                     std::optional<parking_lot::Clock::time_point> deadline) noexcept {
    return parking_lot::detail::park_if(address, validate, [] {}, deadline);
  }
  UnparkResult unpark_one(const void* address, detail::FunctionRef<std::intptr_t(UnparkResult)> callback) noexcept {
    return parking_lot::detail::unpark_one(address, callback);
  }
};

// The algorithm of this file's essay over any Lot. The slow paths live in
// primitives/queued_synchronizer_impl.hpp and are compiled once per Lot by
// an explicit instantiation: QueuedSynchronizer (ThreadLot) in
// queued_synchronizer.cpp, the fiber lots in fibers/.
template <Lot L>
class BasicQueuedSynchronizer {
 public:
  using Clock = std::chrono::steady_clock;
  // The permit count's limit: the largest value of the word's permit field
  // (60 bits, signed), 2^59 - 1, far above Java's Integer.MAX_VALUE. It is
  // the field's own limit so that a count pushed above it wraps to a
  // negative one, which nobody can take from (try_release_by_add).
  static constexpr std::int64_t kMaxPermits = (std::int64_t{1} << 59) - 1;
  // Unfair mode: how long the designated successor may be passed over
  // before newcomers stop barging (kStarving; "A polite successor" says
  // why 2 ms and not the 1 ms of Go's starvation mode and WebKit's fair
  // unlock).
  static constexpr std::chrono::nanoseconds kStarvationInterval = std::chrono::milliseconds(2);

  // Pre: 0 <= permits <= kMaxPermits (unchecked: the shells check).
  explicit BasicQueuedSynchronizer(std::int64_t permits, Fairness fairness = Fairness::kUnfair,
                                   SpinPolicy policy = SpinPolicy::adaptive()) noexcept
    requires std::default_initializable<L>
      : BasicQueuedSynchronizer(permits, fairness, policy, std::in_place) {}
  // The same, with the Lot built from lot_args (a lot with per-lock state).
  template <class... LotArgs>
  BasicQueuedSynchronizer(std::int64_t permits, Fairness fairness, SpinPolicy policy, std::in_place_t,
                          LotArgs&&... lot_args)
      : word_(units(permits)),
        fair_(fairness == Fairness::kFair),
        spin_budget_(std::clamp(policy.initial_spins, policy.min_spins, std::max(policy.min_spins, policy.max_spins))),
        policy_(policy),
        lot_(std::forward<LotArgs>(lot_args)...) {}
  // Pre: no thread waits in it.
  ~BasicQueuedSynchronizer() = default;
  BasicQueuedSynchronizer(const BasicQueuedSynchronizer&) = delete;
  BasicQueuedSynchronizer& operator=(const BasicQueuedSynchronizer&) = delete;

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
    if (!try_acquire(n)) acquire_slow_untimed(n);
  }

  // Takes n permits unless `deadline` passes first; true if it took them.
  // A deadline already past is one try_acquire(). A false return comes no
  // earlier than the deadline.
  bool acquire_until(std::int64_t n, Clock::time_point deadline) noexcept {
    if (try_acquire(n)) return true;
    if (deadline == Clock::time_point::max()) return acquire_slow_untimed(n);
    if (Clock::now() >= deadline) return false;
    return acquire_slow_timed(n, deadline);
  }

  // Adds n permits and wakes whoever should be woken. Pre: 1 <= n and
  // available() + n <= kMaxPermits (unchecked; see try_release).
  // One fetch_add, then the waking decided on the word it added to, as in
  // release_one_by_add (which says why that is safe). Not a load and a
  // compare-exchange: the compare-exchange waits for the load, and on the
  // reference Intel VM that chain cost AdaptiveMutex a fifth of its
  // uncontended speed (63 against 79 M lock/unlock pairs/s at 1 waiter,
  // the same binary otherwise; std::mutex 82).
  void release(std::int64_t n = 1) noexcept {
    const std::uint64_t before = word_.fetch_add(units(n), std::memory_order_release);
    if (must_wake_after_adding_to(before)) (void)release_slow(0, kMaxPermits);
  }

  // One permit with one fetch_sub, for many concurrent takers of one permit
  // each (ReentrantReadWriteLock's readers): where a compare-exchange loop
  // retries whenever another taker moved the word, a fetch_sub always
  // completes. It subtracts blindly, then checks what it found against the
  // rules ("Who may take permits"); if it should not have taken, it gives
  // the permit back through release_one_by_add(), which wakes whoever the
  // dip held off (a waiter that saw the word in between, found too few
  // permits and parked), so nothing is lost. While a dip is in flight the
  // permits may read one below 0 per dipping thread (the field is signed,
  // see permits_of), which no one can take. true: one permit taken.
  bool try_acquire_one_by_sub() noexcept {
    const std::uint64_t before = word_.fetch_sub(units(1), std::memory_order_acquire);
    if (may_barge(before, 1)) return true;
    release_one_by_add();
    return false;
  }

  // try_acquire_one_by_sub() for a shell that orders its one-permit takers
  // itself and keeps them out of this synchronizer's queue
  // (ReentrantReadWriteLock's fair readers wait at a gate of their own
  // while a writer is announced): in fair mode it ignores the queue and
  // takes a permit whenever one is free; in unfair mode it is
  // try_acquire_one_by_sub(). Those takers must never queue here, or the
  // fair queue's order would no longer cover them.
  bool try_acquire_one_by_sub_out_of_turn() noexcept {
    const std::uint64_t before = word_.fetch_sub(units(1), std::memory_order_acquire);
    if (permits_of(before) >= 1 && (fair_ || !(before & kStarving))) return true;
    release_one_by_add();
    return false;
  }

  // release(1) with one fetch_add (the counterpart of
  // try_acquire_one_by_sub): when the word it added to says someone must
  // be woken (a successor asleep in its slot, or threads queued and nobody
  // awake), it then does release()'s waking with nothing more to add. With
  // a designated successor awake and none asleep there is nobody to wake,
  // and release_slow would only compare-exchange the word with itself: a
  // second read-modify-write of the readers' line on every read unlock for
  // as long as a woken thread waits for a core (with more threads than
  // cores, up to a time slice; ReentrantReadWriteLock's essay has the
  // figures). Deciding on `before` is safe: whoever changes the flags after
  // it (the successor taking its permits, or giving up) does its own
  // waking (pass_on, pass_on_if_free), as for any release that found
  // kWoken set.
  void release_one_by_add() noexcept {
    const std::uint64_t before = word_.fetch_add(units(1), std::memory_order_release);
    if (must_wake_after_adding_to(before)) (void)release_slow(0, kMaxPermits);
  }

  // release(n) unless the count would exceed max_permits; then false, and
  // nothing changed (one read-modify-write decides, so it is exact).
  bool try_release(std::int64_t n, std::int64_t max_permits) noexcept { return release_slow(n, max_permits); }

  // try_release(n, kMaxPermits) with one fetch_add instead of a load and a
  // compare-exchange (release() says what that chain costs: Semaphore(1)
  // went from 69 to 91 M acquire/release pairs/s at 1 waiter on the
  // reference Intel VM, AdaptiveMutex's speed). It adds first and checks
  // what it found: an add that took the count above kMaxPermits is taken
  // back (take_back_overshoot) and reported as false. Meanwhile nobody can
  // use the excess: kMaxPermits is the permit field's largest value, so
  // the overshooting add wrapped the field to a negative count, and every
  // taker checks for a count of at least n. So "nothing changed" holds for
  // every other thread too, and a concurrent valid release is not refused
  // (it adds to the wrapped count, which the take-back unwraps).
  // Blind spot: try_acquire_one_by_sub's dips in flight lower the count
  // the check sees (the exact try_release() has the same one). A release
  // that overshoots by no more than the number of threads dipping at that
  // instant passes, and leaves the count wrapped, so that nobody can take
  // a permit again. Only a count within that many permits of 2^59 (about
  // 5.8e17) can meet it.
  // Pre: 1 <= n <= kMaxPermits.
  bool try_release_by_add(std::int64_t n) noexcept {
    const std::uint64_t before = word_.fetch_add(units(n), std::memory_order_release);
    if (permits_of(before) > kMaxPermits - n) [[unlikely]] {
      take_back_overshoot(n);
      return false;
    }
    if (must_wake_after_adding_to(before)) (void)release_slow(0, kMaxPermits);
    return true;
  }

  // Unfair mode only: once a request for every permit (acquire of
  // kMaxPermits: a read-write lock's writer) is the designated successor,
  // newcomers stop barging at once (kStarving), not after kStarvationInterval.
  // Such a request is met only when every holder has left, which a stream
  // of barging one-permit takers can put off for the whole interval; Java's
  // unfair ReentrantReadWriteLock likewise stops new readers as soon as a
  // writer heads its queue. Call before the synchronizer is shared
  // (ReentrantReadWriteLock's constructor does).
  void stop_barging_behind_a_woken_exclusive() noexcept { exclusive_stops_barging_ = true; }

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
  // The lot, for the shells' hooks (e.g. a fiber lot's pin bookkeeping).
  L& lot() noexcept { return lot_; }

  // Room on the word's cache line for an owning shell's bookkeeping, as AQS
  // keeps exclusiveOwnerThread beside its state: ReentrantLock stores its
  // owner and hold count here, so that taking the lock and recording the
  // owner touch one cache line, not two (on a separate line they halved
  // ReentrantLock's throughput at 2 waiters with empty sections: that line
  // moved between the cores at every hand-over as well). The synchronizer
  // itself never reads or writes them.
  std::atomic<std::thread::id>& owner_slot() noexcept { return owner_; }
  const std::atomic<std::thread::id>& owner_slot() const noexcept { return owner_; }
  std::int64_t& hold_count_slot() noexcept { return holds_; }
  std::int64_t hold_count_slot() const noexcept { return holds_; }

 private:
  static constexpr std::uint64_t kParked = 1;
  static constexpr std::uint64_t kWoken = 2;
  static constexpr std::uint64_t kSuccessorParked = 4;
  static constexpr std::uint64_t kStarving = 8;
  static constexpr unsigned kPermitShift = 4;

  static constexpr std::uint64_t units(std::int64_t n) noexcept {
    return static_cast<std::uint64_t>(n) << kPermitShift;
  }
  // Signed: try_acquire_one_by_sub's dips may take the field below 0
  // (arithmetic shift; permits never reach bit 63 otherwise).
  static constexpr std::int64_t permits_of(std::uint64_t w) noexcept {
    return static_cast<std::int64_t>(w) >> kPermitShift;
  }

  // Permits were just added to `before`: must somebody be woken? Yes if the
  // designated successor sleeps in its slot, or threads are queued and
  // nobody is awake to serve them (release_slow(0, ...) then does it).
  static constexpr bool must_wake_after_adding_to(std::uint64_t before) noexcept {
    return (before & kSuccessorParked) || (before & (kParked | kWoken)) == kParked;
  }

  // May a thread that is not the designated successor take n permits now?
  bool may_barge(std::uint64_t w, std::int64_t n) const noexcept {
    if (permits_of(w) < n) return false;
    return fair_ ? !(w & (kParked | kWoken)) : !(w & kStarving);
  }

  // The successor slot: a second lot address, distinct from the word's.
  const void* successor_slot() const noexcept { return reinterpret_cast<const char*>(&word_) + 1; }

  // Non-template entry points, so that an explicit instantiation of the
  // class compiles both versions of the template.
  bool acquire_slow_untimed(std::int64_t n) noexcept;
  bool acquire_slow_timed(std::int64_t n, Clock::time_point deadline) noexcept;
  template <bool kTimed>
  bool acquire_slow(std::int64_t n, Clock::time_point deadline) noexcept;
  bool release_slow(std::int64_t n, std::int64_t max_permits) noexcept;
  void take_back_overshoot(std::int64_t n) noexcept;
  void wake_head_claimed() noexcept;
  void pass_on_if_free() noexcept;
  bool wake_one_more_if_successor_is_late() noexcept;
  void adapt(bool won) noexcept;

  alignas(kCacheLineSize) std::atomic<std::uint64_t> word_;
  const bool fair_;
  std::atomic<std::thread::id> owner_{};  // owner_slot()
  std::int64_t holds_ = 0;                 // hold_count_slot()
  // Slow-path-only state, off the word's cache line so that spinners and
  // queuers do not disturb the holder.
  alignas(kCacheLineSize) std::atomic<std::uint32_t> spin_budget_;
  std::atomic<std::uint32_t> probes_{0};   // contended acquires at budget 0
  std::atomic<std::uint32_t> spinners_{0}; // threads in a spin phase now
  std::atomic<std::int64_t> waiting_{0};   // queue_length()
  // When the designated successor was last woken (steady_clock ns) while it
  // has not run since; 0 once it runs. Written under the bucket lock by the
  // unparker's callback, so before the woken thread can clear it. Relaxed:
  // a hint for "A late successor", confirmed by nothing but a clock.
  std::atomic<std::int64_t> successor_woken_at_{0};
  SpinPolicy policy_;
  bool exclusive_stops_barging_ = false;  // stop_barging_behind_a_woken_exclusive()
  LockStats stats_;
  [[no_unique_address]] L lot_;
};

// The synchronizer of primitives/: waiters are OS threads in the ParkingLot.
using QueuedSynchronizer = BasicQueuedSynchronizer<ThreadLot>;
extern template class BasicQueuedSynchronizer<ThreadLot>;

}  // namespace locklab
