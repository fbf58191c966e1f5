// Slow paths of ReentrantReadWriteLock: the per-thread read holds, the
// errors, the timed acquisitions and the write lock's Condition. The design
// and its memory-order argument are in reentrant_read_write_lock.hpp.
#include "primitives/reentrant_read_write_lock.hpp"

#include <cassert>
#include <string>
#include <system_error>
#include <vector>

#include "primitives/futex.hpp"

namespace locklab {

namespace {

using Clock = std::chrono::steady_clock;

// This thread's read holds, one entry per lock it is reading (Java's
// ThreadLocal HoldCounter, one list for all locks instead of one
// ThreadLocal per lock). A thread reads few locks at once, so a linear scan
// of a vector beats a hash map; entries are removed when their count drops
// to 0, so the list never holds a lock the thread is not reading.
struct ReadHold {
  const void* lock;
  std::int64_t count;
};
thread_local std::vector<ReadHold> t_read_holds;

ReadHold* find_read_hold(const void* lock) noexcept {
  for (ReadHold& h : t_read_holds) {
    if (h.lock == lock) return &h;
  }
  return nullptr;
}

// Adds one hold; returns the count before (0: the thread's first).
std::int64_t add_read_hold(const void* lock) {
  if (ReadHold* h = find_read_hold(lock)) return h->count++;
  t_read_holds.push_back({lock, 1});
  return 0;
}

// Drops one hold; returns the count after, or -1 (and changes nothing) if
// the thread held none.
std::int64_t drop_read_hold(const void* lock) noexcept {
  ReadHold* h = find_read_hold(lock);
  if (h == nullptr) return -1;
  const std::int64_t left = --h->count;
  if (left == 0) {
    *h = t_read_holds.back();
    t_read_holds.pop_back();
  }
  return left;
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
  const ReadHold* h = find_read_hold(this);
  return h == nullptr ? 0 : h->count;
}

void ReentrantReadWriteLock::lock_shared() {
  // Record the hold first: a re-entry (or a writer's read) is then done
  // without touching the synchronizer. push_back may throw bad_alloc, which
  // leaves nothing held.
  if (add_read_hold(this) > 0) return;
  if (is_write_locked_by_current_thread()) return;  // carved out of the write's permits
  sync_.acquire(1);
}

bool ReentrantReadWriteLock::try_lock_shared() {
  if (add_read_hold(this) > 0) return true;
  if (is_write_locked_by_current_thread() || sync_.try_acquire(1)) return true;
  (void)drop_read_hold(this);
  return false;
}

bool ReentrantReadWriteLock::read_lock_until(Clock::time_point deadline) {
  if (add_read_hold(this) > 0) return true;
  if (is_write_locked_by_current_thread() || sync_.acquire_until(1, deadline)) return true;
  (void)drop_read_hold(this);
  return false;
}

void ReentrantReadWriteLock::unlock_shared() {
  const std::int64_t left = drop_read_hold(this);
  if (left < 0) throw_not_held("read_unlock");
  if (left > 0) return;
  // A writer's reads took no permit of their own (see the essay).
  if (!is_write_locked_by_current_thread()) sync_.release(1);
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

// ---- Condition (ReentrantLock::Condition's algorithm on the write lock) ----

struct ReentrantReadWriteLock::Condition::Waiter {
  std::atomic<std::uint32_t> word{0};  // 0 = waiting, 1 = signalled
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  bool queued = true;
};

ReentrantReadWriteLock::Condition::~Condition() {
  assert(head_ == nullptr && "ReentrantReadWriteLock::Condition destroyed while threads await on it");
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

ReentrantReadWriteLock::Condition::Waiter* ReentrantReadWriteLock::Condition::pop_locked() noexcept {
  Waiter* w = head_;
  if (w == nullptr) return nullptr;
  head_ = w->next;
  (head_ != nullptr ? head_->prev : tail_) = nullptr;
  w->next = w->prev = nullptr;
  w->queued = false;
  --length_;
  return w;
}

bool ReentrantReadWriteLock::Condition::await_until_steady(Clock::time_point deadline) {
  check_held("Condition::await");
  if (lock_.read_hold_count() > 0) {
    // Re-taking the write lock after the wait would wait for our own read.
    throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                            "ReentrantReadWriteLock::Condition::await by a writer that also holds the read lock");
  }
  const bool timed = deadline != Clock::time_point::max();
  if (timed && Clock::now() >= deadline) return false;

  Waiter me;
  me.prev = tail_;
  (tail_ != nullptr ? tail_->next : head_) = &me;
  tail_ = &me;
  ++length_;

  const std::thread::id self = std::this_thread::get_id();
  const std::int64_t holds = lock_.holds();
  lock_.holds() = 0;
  lock_.owner().store(std::thread::id(), std::memory_order_relaxed);
  lock_.sync_.release(kAllPermits);

  // A signal sets the word before it wakes us, so sleeping only while it is
  // 0 loses no wake-up.
  while (me.word.load(std::memory_order_acquire) == 0) {
    if (timed) {
      if (Clock::now() >= deadline) break;
      futex_wait_until(me.word, 0, deadline);
    } else {
      futex_wait(me.word, 0);
    }
  }

  lock_.sync_.acquire(kAllPermits);
  lock_.become_owner(self);
  lock_.holds() = holds;
  if (!me.queued) return true;
  (me.prev != nullptr ? me.prev->next : head_) = me.next;
  (me.next != nullptr ? me.next->prev : tail_) = me.prev;
  --length_;
  return false;
}

void ReentrantReadWriteLock::Condition::signal() {
  check_held("Condition::signal");
  Waiter* w = pop_locked();
  if (w == nullptr) return;
  // The awaiter returns only after re-taking the write lock, which we hold:
  // its node outlives both calls.
  w->word.store(1, std::memory_order_release);
  futex_wake_one(w->word);
}

void ReentrantReadWriteLock::Condition::signal_all() {
  check_held("Condition::signal_all");
  while (Waiter* w = pop_locked()) {
    w->word.store(1, std::memory_order_release);
    futex_wake_one(w->word);
  }
}

bool ReentrantReadWriteLock::Condition::has_waiters() const {
  check_held("Condition::has_waiters");
  return head_ != nullptr;
}

std::int64_t ReentrantReadWriteLock::Condition::wait_queue_length() const {
  check_held("Condition::wait_queue_length");
  return length_;
}

}  // namespace locklab
