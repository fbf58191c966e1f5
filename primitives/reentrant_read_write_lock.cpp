// Slow paths of ReentrantReadWriteLock: the per-thread read holds, the
// errors, the timed acquisitions and the write lock's Condition. The design
// and its memory-order argument are in reentrant_read_write_lock.hpp.
#include "primitives/reentrant_read_write_lock.hpp"

#include <cassert>
#include <string>
#include <system_error>
#include <vector>

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
  sync_.acquire(1);
  h->permit = true;
}

bool ReentrantReadWriteLock::try_lock_shared() {
  if (ReadHoldRecord* h = find_read_hold(this)) {
    ++h->count;
    return true;
  }
  ReadHoldRecord* h = insert_read_hold(this);
  if (is_write_locked_by_current_thread()) return true;
  if (sync_.try_acquire(1)) {
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
  if (sync_.acquire_until(1, deadline)) {
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
  if (sync_.try_acquire(kAllPermits)) {
    become_owner(self);
    return true;
  }
  if (reenter_write(self)) return true;
  if (!sync_.acquire_until(kAllPermits, deadline)) return false;
  become_owner(self);
  return true;
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
        lock_.sync_.release(kAllPermits);
      },
      [&] {  // take it back with the same hold count
        lock_.sync_.acquire(kAllPermits);
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
