// Slow paths of ReentrantReadWriteLock: the per-thread read holds, the
// errors, the timed acquisitions and the write lock's Condition. The design
// and its memory-order argument are in reentrant_read_write_lock.hpp.
#include "primitives/reentrant_read_write_lock.hpp"

#include <cassert>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "primitives/cpu_relax.hpp"
#include "primitives/parking_lot.hpp"

namespace locklab {

namespace {

using Clock = std::chrono::steady_clock;

// This thread's read holds: the first lock it reads in the cached slot
// (detail::t_cached_read_hold, the inline fast path's), the others in a
// list, one entry per lock (Java's ThreadLocal HoldCounter and its
// cachedHoldCounter, one list for all locks instead of one ThreadLocal per
// lock). A thread reads few locks at once, so a linear scan of a vector
// beats a hash map. A lock is in the slot or in the list, never both, and
// only while its count is > 0.
using detail::ReadHoldRecord;
thread_local std::vector<ReadHoldRecord> t_read_holds;

ReadHoldRecord* find_read_hold(const void* lock) noexcept {
  ReadHoldRecord& c = detail::t_cached_read_hold;
  if (c.lock == lock) return &c;
  if (detail::t_listed_read_holds == 0) return nullptr;
  for (ReadHoldRecord& h : t_read_holds) {
    if (h.lock == lock) return &h;
  }
  return nullptr;
}

// A new record (count 1, no permit yet) for a lock the thread does not
// read: the slot if free, else the list. push_back may throw bad_alloc,
// which records nothing.
ReadHoldRecord* insert_read_hold(const void* lock) {
  ReadHoldRecord& c = detail::t_cached_read_hold;
  if (c.lock == nullptr) {
    c = {lock, 1, false};
    return &c;
  }
  t_read_holds.push_back({lock, 1, false});
  ++detail::t_listed_read_holds;
  return &t_read_holds.back();
}

// Removes a record whose count reached 0.
void erase_read_hold(ReadHoldRecord* h) noexcept {
  if (h == &detail::t_cached_read_hold) {
    *h = {};
    return;
  }
  *h = t_read_holds.back();
  t_read_holds.pop_back();
  --detail::t_listed_read_holds;
}
}  // namespace

void ReentrantReadWriteLock::throw_not_held(const char* what) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          std::string("ReentrantReadWriteLock: ") + what + " by a thread that does not hold it");
}

void ReentrantReadWriteLock::throw_upgrade() {
  throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                          "ReentrantReadWriteLock: write lock requested by a thread holding only the read lock "
                          "(upgrade is refused: it would wait for its own read; unlock the read first)");
}

std::int64_t ReentrantReadWriteLock::read_hold_count() const noexcept {
  const ReadHoldRecord* h = find_read_hold(this);
  return h == nullptr ? 0 : h->count;
}

bool ReentrantReadWriteLock::mark_downgraded_read() noexcept {
  ReadHoldRecord* h = find_read_hold(this);
  if (h == nullptr) return false;
  h->permit = true;
  return true;
}

// Everything lock_shared()'s fast path does not take: a re-entry recorded
// in the list, a first hold while the thread reads other locks, a writer's
// read, and a first hold that must wait (or whose dip found a writer).
void ReentrantReadWriteLock::lock_shared_slow() {
  if (ReadHoldRecord* h = find_read_hold(this)) {
    ++h->count;  // a re-entry never waits
    return;
  }
  ReadHoldRecord* h = insert_read_hold(this);
  if (is_write_locked_by_current_thread()) return;  // carved out of the write's permits
  if (sync_.is_fair()) {
    (void)read_permit_fair(Clock::time_point::max());
  } else {
    sync_.acquire(1);
  }
  h->permit = true;
}

bool ReentrantReadWriteLock::try_lock_shared() {
  if (ReadHoldRecord* h = find_read_hold(this)) {
    ++h->count;
    return true;
  }
  ReadHoldRecord* h = insert_read_hold(this);
  if (is_write_locked_by_current_thread()) return true;
  // Fair: a permit if no writer is announced (the gate's rule), never a wait.
  const bool took = sync_.is_fair() ? pending_writers(writers_.load(std::memory_order_seq_cst)) == 0 &&
                                          sync_.available() >= 1 && sync_.try_acquire_one_by_sub_out_of_turn()
                                    : sync_.try_acquire(1);
  if (took) {
    h->permit = true;
    return true;
  }
  erase_read_hold(h);
  return false;
}

bool ReentrantReadWriteLock::read_lock_until(Clock::time_point deadline) {
  if (ReadHoldRecord* h = find_read_hold(this)) {
    ++h->count;
    return true;
  }
  ReadHoldRecord* h = insert_read_hold(this);
  if (is_write_locked_by_current_thread()) return true;
  if (sync_.is_fair() ? read_permit_fair(deadline) : sync_.acquire_until(1, deadline)) {
    h->permit = true;
    return true;
  }
  erase_read_hold(h);
  return false;
}

void ReentrantReadWriteLock::unlock_shared_slow() {
  ReadHoldRecord* h = find_read_hold(this);
  if (h == nullptr) throw_not_held("read_unlock");
  if (--h->count > 0) return;
  const bool permit = h->permit;
  erase_read_hold(h);
  // A writer's reads took no permit of their own (see the essay).
  if (permit) sync_.release_one_by_add();
}

bool ReentrantReadWriteLock::write_lock_until(Clock::time_point deadline) {
  const std::thread::id self = std::this_thread::get_id();
  const bool fair = sync_.is_fair();
  if (!fair && sync_.try_acquire(kAllPermits)) {
    become_owner(self);
    return true;
  }
  if (reenter_write(self)) return true;
  if (fair) writers_.fetch_add(kOnePending, std::memory_order_seq_cst);
  if (!sync_.acquire_until(kAllPermits, deadline)) {
    if (fair) withdraw_writer();
    return false;
  }
  become_owner(self);
  return true;
}

// ---- fair mode: the writers word and the readers' gate ----------------

namespace {
std::uint32_t completed_phases(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w >> 32); }
// Has the completed-phase count `done` reached `target`? Modulo 2^32: a
// waiting reader's target is at most (pending writers) ahead of done.
bool reached(std::uint32_t done, std::uint32_t target) noexcept {
  return static_cast<std::int32_t>(done - target) >= 0;
}
// Tokens a gate wake hands a reader (never a permit, see the essay):
// kRetry, a writer gave up (work out your target again), or kPhaseDone, a
// write phase of your slot is over (take a permit if it was yours).
constexpr std::intptr_t kRetry = 1;
constexpr std::intptr_t kPhaseDone = 2;
// A reader that found no permit although its write phases are over is
// looking at a writer between its completion and its release (a few
// instructions): it polls, and yields every this many polls in case that
// writer was preempted (64 polls, ~1.3 us: the synchronizer's clock-read
// interval, short enough not to matter next to a preemption, long enough
// not to yield on every poll).
constexpr std::int64_t kPollsPerYield = 64;
// A reader that must wait for a write phase polls for its completion this
// many times before it parks: none. The classic 2-competitive rule says to
// spin about what a park and wake-up cost (~2.6 us, 128 polls at ~20 ns, the
// median futex wake-to-run on the reference VM), and that is what this was
// first. Measured on the 2-core lab VM (bench_rwlocks, fair mode, 300 ms
// points, the two builds alternated twice, 2026-12-02), parking at once ran
// 2.4-3.8x the 128-poll spin at 2 and 4 waiters with 99% and 90% reads,
// 1.1-1.7x at 16 and 64, and 10-30x at 128 with 90% reads (3.1-3.7 against
// 0.12-0.34 M ops/s), with writer wait p99 at 1 us where the spin let it
// reach 2.5-3.4 ms: a spinning reader holds one of the two cores that the
// writer it waits for needs to finish its phase.
constexpr std::int64_t kGateSpinPolls = 0;
}  // namespace

bool ReentrantReadWriteLock::try_acquire_write_permits_fair() noexcept {
  // Refuse without announcing when the lock is visibly busy: a failed
  // try would otherwise stop new readers and wake the parked ones for
  // nothing.
  if (sync_.available() != kAllPermits || pending_writers(writers_.load(std::memory_order_seq_cst)) != 0) {
    return false;
  }
  writers_.fetch_add(kOnePending, std::memory_order_seq_cst);
  if (sync_.try_acquire(kAllPermits)) return true;
  withdraw_writer();
  return false;
}

// Completes this writer's phase, gives its permits back, then wakes the
// readers parked for the phase. Order matters: after the completion no
// reader parks for this phase (its validation sees the phase done), and
// every reader that parked before it is in the slot's queue, with the
// slot's bit set, when the bit is read below (the reader sets the bit
// before it validates, all seq_cst), so the loop finds it.
void ReentrantReadWriteLock::release_write_permits_fair(std::int64_t n) noexcept {
  const std::uint64_t w =
      writers_.fetch_add(kOneCompletion - kOnePending, std::memory_order_seq_cst) + (kOneCompletion - kOnePending);
  const unsigned slot = completed_phases(w) % kGateSlots;
  sync_.release(n);
  if (gate_parked_.load(std::memory_order_seq_cst) & (1u << slot)) (void)wake_gate_slot(slot, kPhaseDone);
}

// A writer that announced itself and gives up without the lock: readers
// parked for a phase that now will not come (their target counted it) are
// woken to look again; all slots, since the phase they wait for is not
// known here (rare: timeouts and failed try_lock()s only).
void ReentrantReadWriteLock::withdraw_writer() noexcept {
  writers_.fetch_sub(kOnePending, std::memory_order_seq_cst);
  const std::uint32_t parked = gate_parked_.load(std::memory_order_seq_cst);
  for (unsigned slot = 0; slot < kGateSlots; ++slot) {
    if (parked & (1u << slot)) (void)wake_gate_slot(slot, kRetry);
  }
}

// Wakes every reader parked at `slot`, oldest first, each with `token`;
// returns how many. The last wake clears the slot's bit under the slot's
// bucket lock, so a reader parking afterwards sets it again before it
// validates (under the same lock), and the next writer of that slot sees it.
std::int64_t ReentrantReadWriteLock::wake_gate_slot(unsigned slot, std::intptr_t token) noexcept {
  const std::uint32_t bit = 1u << slot;
  std::int64_t woken = 0;
  for (;;) {
    const UnparkResult r = parking_lot::unpark_one(gate_slot(slot), [&](UnparkResult u) -> std::intptr_t {
      if (!u.may_have_more_threads) gate_parked_.fetch_and(~bit, std::memory_order_seq_cst);
      return token;
    });
    if (!r.did_unpark) return woken;
    ++woken;
    gate_stats_.record_wake();
    if (!r.may_have_more_threads) return woken;
  }
}

// A fair reader's first permit. The reader's target is the write phase it
// waits for: completed + pending when it first sees a writer announced,
// i.e. the last writer announced before it. It spins, then parks at that
// phase's slot until the writer of that phase wakes it, and then takes a
// permit as a newcomer does (if the next writer got in first, it waits for
// that one too).
bool ReentrantReadWriteLock::read_permit_fair(Clock::time_point deadline) noexcept {
  const bool timed = deadline != Clock::time_point::max();
  std::int64_t polls = 0;
  std::int64_t gate_polls = 0;  // polls spent waiting for a write phase since we last ran
  bool have_target = false;
  std::uint32_t target = 0;
  auto done = [&](bool took) {
    gate_stats_.record_contended_acquire(polls);
    return took;
  };
  for (;;) {
    const std::uint64_t w = writers_.load(std::memory_order_seq_cst);
    const std::uint32_t pending = pending_writers(w);
    const std::uint32_t completed = completed_phases(w);
    if (!have_target && pending != 0) {
      target = completed + pending;
      have_target = true;
    }
    if (!have_target || reached(completed, target)) {
      // No write phase to wait for (or ours are over): a permit if one is
      // free, out of the synchronizer's turn (its queue holds writers only).
      if (sync_.available() >= 1 && sync_.try_acquire_one_by_sub_out_of_turn()) return done(true);
      // None free. A writer is inside its section: it was announced after
      // our target was taken (and got in before we ran), or after we
      // looked: wait for it as well. Otherwise a writer is between its
      // completion and its release: poll.
      if (is_write_locked()) {
        have_target = false;
        if (pending != 0) continue;
      }
      if (timed && polls % kPollsPerYield == 0 && Clock::now() >= deadline) return done(false);
      if (++polls % kPollsPerYield == 0) {
        std::this_thread::yield();
      } else {
        (cpu_relax)();  // parenthesized: see cpu_relax.hpp
      }
      continue;
    }
    if (gate_polls < kGateSpinPolls) {
      // Our write phase is under way: poll for its completion first; a
      // reader that sees it completed takes a permit like a newcomer above.
      ++gate_polls;
      if (timed && gate_polls % kPollsPerYield == 0 && Clock::now() >= deadline) return done(false);
      ++polls;
      (cpu_relax)();
      continue;
    }
    if (timed && Clock::now() >= deadline) return done(false);
    const unsigned slot = target % kGateSlots;
    const std::uint32_t bit = 1u << slot;
    gate_parked_.fetch_or(bit, std::memory_order_seq_cst);
    bool counted = false;
    const ParkResult r = parking_lot::park_if(
        gate_slot(slot),
        [&] {
          // Sleep only while the slot's bit is set (the next writer of
          // this slot will look), our phase is not done, and the writers
          // pending can still complete it (a writer that gave up wakes
          // every slot, but only after its fetch_sub; a reader that read
          // the count before it must not sleep on a phase that will not
          // come).
          const std::uint64_t v = writers_.load(std::memory_order_seq_cst);
          const std::uint32_t done_now = completed_phases(v);
          const bool sleep = (gate_parked_.load(std::memory_order_seq_cst) & bit) != 0 && !reached(done_now, target) &&
                             target - done_now <= pending_writers(v);
          if (sleep) {
            counted = true;
            gate_waiting_.fetch_add(1, std::memory_order_relaxed);
          }
          return sleep;
        },
        [] {}, timed ? std::optional<Clock::time_point>(deadline) : std::nullopt);
    if (counted) gate_waiting_.fetch_sub(1, std::memory_order_relaxed);
    if (r.status == ParkStatus::kInvalid) continue;
    gate_stats_.record_park();
    if (r.status == ParkStatus::kTimedOut) return done(false);
    if (r.token == kRetry) have_target = false;
    // kPhaseDone: our phase is over (or, with kGateSlots writers pending,
    // another phase of our slot: then we wait on). Running again, we may
    // spin once more if the next writer got in first.
    gate_polls = 0;
  }
}

// ---- Condition: the write lock's half; the queue is ConditionQueue's ----

ReentrantReadWriteLock::Condition::~Condition() {
  assert(queue_.empty() && "ReentrantReadWriteLock::Condition destroyed while threads await on it");
}

void ReentrantReadWriteLock::Condition::check_held(const char* what) const {
  if (!lock_.is_write_locked_by_current_thread()) ReentrantReadWriteLock::throw_not_held(what);
}

bool ReentrantReadWriteLock::Condition::expired_now() const {
  check_held("Condition::await_for");
  if (lock_.read_hold_count() > 0) {
    throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                            "ReentrantReadWriteLock::Condition::await_for by a writer that also holds the read lock");
  }
  return false;
}

bool ReentrantReadWriteLock::Condition::await_until_steady(Clock::time_point deadline) {
  check_held("Condition::await");
  if (lock_.read_hold_count() > 0) {
    // Re-taking the write lock after the wait would wait for our own read.
    throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                            "ReentrantReadWriteLock::Condition::await by a writer that also holds the read lock");
  }
  const std::thread::id self = std::this_thread::get_id();
  std::int64_t holds = 0;
  return queue_.await_until(
      deadline,
      [&] {  // release the write lock completely, remembering the hold count
        holds = lock_.holds();
        lock_.holds() = 0;
        lock_.owner().store(std::thread::id(), std::memory_order_relaxed);
        lock_.release_write_permits(kAllPermits);
      },
      [&] {  // take it back with the same hold count
        lock_.acquire_write_permits();
        lock_.become_owner(self);
        lock_.holds() = holds;
      });
}

void ReentrantReadWriteLock::Condition::signal() {
  check_held("Condition::signal");
  queue_.signal();
}

void ReentrantReadWriteLock::Condition::signal_all() {
  check_held("Condition::signal_all");
  queue_.signal_all();
}

bool ReentrantReadWriteLock::Condition::has_waiters() const {
  check_held("Condition::has_waiters");
  return !queue_.empty();
}

std::int64_t ReentrantReadWriteLock::Condition::wait_queue_length() const {
  check_held("Condition::wait_queue_length");
  return queue_.length();
}

}  // namespace locklab
