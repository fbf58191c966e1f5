// Slow paths of Semaphore: the waiter queue, parking, hand-off (fair) and
// wake-the-head (unfair). The algorithm and its memory-order argument are in
// semaphore.hpp.
#include "primitives/semaphore.hpp"

#include <cassert>
#include <stdexcept>
#include <string>
#include <thread>

#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab {

using Clock = std::chrono::steady_clock;

namespace {
constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

bool passed(Clock::time_point deadline) { return deadline != kNoDeadline && Clock::now() >= deadline; }

// Parks on `word` while it holds `expected`, until `deadline` (if any).
FutexWaitResult park(std::atomic<std::uint32_t>& word, std::uint32_t expected, Clock::time_point deadline) {
  return deadline == kNoDeadline ? futex_wait(word, expected) : futex_wait_until(word, expected, deadline);
}
}  // namespace

// A queued thread. Lives on that thread's stack from joining the queue until
// it returns; see "one deliberate, benign race" in the header for why a
// waker may still pass the word's address to the kernel just after that.
struct Semaphore::Waiter {
  explicit Waiter(std::ptrdiff_t n) : permits(n) {}

  // Fair: 0 = waiting, 1 = granted (its permits are taken for it).
  // Unfair: a wake-up counter, bumped by each wake-up sent to this node.
  std::atomic<std::uint32_t> word{0};
  const std::ptrdiff_t permits;  // the request
  // Guarded by the queue lock:
  Waiter* prev = nullptr;
  Waiter* next = nullptr;  // queue link; after a grant, the chain of granted nodes
  bool granted = false;    // fair mode: unlinked and given its permits
};

Semaphore::Semaphore(std::ptrdiff_t initial_permits, Fairness fairness)
    : state_(to_units(initial_permits)), fair_(fairness == Fairness::kFair) {
  if (initial_permits < 0 || initial_permits > kMaxPermits) {
    throw std::invalid_argument("Semaphore: initial permits " + std::to_string(initial_permits) +
                                " outside [0, kMaxPermits]");
  }
}

Semaphore::~Semaphore() { assert(head_ == nullptr && "Semaphore destroyed while threads wait in it"); }

void Semaphore::throw_bad_count(std::ptrdiff_t n, const char* who) {
  throw std::invalid_argument(std::string(who) + ": permit count " + std::to_string(n) +
                              " outside [1, kMaxPermits]");
}

// --- the queue lock ---------------------------------------------------------

void Semaphore::lock_queue() noexcept {
  // Test-and-test-and-set: poll with plain loads (the line stays shared in
  // every poller's cache) and exchange only when it looks free.
  while (queue_lock_.exchange(1, std::memory_order_acquire) != 0) {
    for (int polls = 0; queue_lock_.load(std::memory_order_relaxed) != 0; ++polls) {
      if (polls < 64) {
        cpu_relax();
      } else {
        std::this_thread::yield();  // the holder may have been preempted
      }
    }
  }
}

void Semaphore::unlock_queue() noexcept { queue_lock_.store(0, std::memory_order_release); }

void Semaphore::enqueue_locked(Waiter& w) noexcept {
  w.prev = tail_;
  w.next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = &w;
  } else {
    head_ = &w;
  }
  tail_ = &w;
  queue_length_.fetch_add(1, std::memory_order_relaxed);
}

void Semaphore::unlink_locked(Waiter& w) noexcept {
  (w.prev != nullptr ? w.prev->next : head_) = w.next;
  (w.next != nullptr ? w.next->prev : tail_) = w.prev;
  w.prev = w.next = nullptr;
  queue_length_.fetch_sub(1, std::memory_order_relaxed);
}

// --- taking permits without queuing -----------------------------------------

// The fast path's compare-exchange, retried while it fails only because the
// word changed. Respects fairness: a fair semaphore with waiters says no.
bool Semaphore::try_acquire_slow(std::ptrdiff_t n) noexcept {
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    if (fair_ && (s & kQueued) != 0) return false;
    if (permits_of(s) < n) return false;
    if (state_.compare_exchange_weak(s, s - to_units(n), std::memory_order_acquire, std::memory_order_relaxed)) {
      return true;
    }
  }
}

// Unfair waiters: take the permits whether or not others are queued.
bool Semaphore::take_barging(std::ptrdiff_t n) noexcept {
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  while (permits_of(s) >= n) {
    if (state_.compare_exchange_weak(s, s - to_units(n), std::memory_order_acquire, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

// --- acquiring with a wait --------------------------------------------------

bool Semaphore::acquire_slow(std::ptrdiff_t n, Clock::time_point deadline) {
  if (try_acquire_slow(n)) return true;  // the fast path may just have lost a race
  if (passed(deadline)) return false;    // zero, negative or past: one try only

  Waiter me(n);
  Waiter* granted = nullptr;
  lock_queue();
  enqueue_locked(me);
  state_.fetch_or(kQueued, std::memory_order_relaxed);
  // Permits released before the flag was set took the fast path and woke
  // nobody. Fair: serve the queue now (possibly us). Unfair: our first try
  // in wait_unfair() sees them.
  if (fair_) granted = grant_locked();
  unlock_queue();
  wake_granted(granted);
  stats_.record_contended_acquire(0);
  return fair_ ? wait_fair(me, deadline) : wait_unfair(me, deadline);
}

bool Semaphore::wait_fair(Waiter& me, Clock::time_point deadline) {
  for (;;) {
    if (me.word.load(std::memory_order_acquire) != 0) return true;  // granted: the permits are ours
    if (passed(deadline)) break;
    if (park(me.word, 0, deadline) != FutexWaitResult::kValueChanged) stats_.record_park();
  }
  // Timed out. Leave the queue, unless a grant won the race.
  lock_queue();
  if (me.granted) {
    unlock_queue();
    // The granter stores 1 right after dropping the queue lock; the
    // permits are ours, so wait for that store (no deadline: it is imminent).
    while (me.word.load(std::memory_order_acquire) == 0) futex_wait(me.word, 0);
    return true;
  }
  unlink_locked(me);
  Waiter* granted = nullptr;
  if (head_ == nullptr) {
    state_.fetch_and(~kQueued, std::memory_order_relaxed);
  } else {
    granted = grant_locked();  // a big request leaving the head can unblock smaller ones
  }
  unlock_queue();
  wake_granted(granted);
  return false;
}

bool Semaphore::wait_unfair(Waiter& me, Clock::time_point deadline) {
  bool acquired = false;
  for (;;) {
    // Read the wake-up counter before trying, sleep only if it is unchanged
    // (see "No lost wake-ups" in the header).
    const std::uint32_t wakeups = me.word.load(std::memory_order_acquire);
    if (take_barging(me.permits)) {
      acquired = true;
      break;
    }
    if (passed(deadline)) break;
    if (park(me.word, wakeups, deadline) != FutexWaitResult::kValueChanged) stats_.record_park();
  }
  lock_queue();
  unlink_locked(me);
  if (head_ == nullptr) state_.fetch_and(~kQueued, std::memory_order_relaxed);
  // We may have consumed a wake-up (or left permits) the new head needs.
  std::atomic<std::uint32_t>* next = head_to_wake_locked();
  unlock_queue();
  wake(next);
  return acquired;
}

// --- releasing --------------------------------------------------------------

void Semaphore::release_slow(std::ptrdiff_t n) {
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    if (permits_of(s) > kMaxPermits - n) {
      throw std::invalid_argument("Semaphore::release: " + std::to_string(n) + " more permits would exceed kMaxPermits");
    }
    if ((s & kQueued) != 0) break;
    if (state_.compare_exchange_weak(s, s + to_units(n), std::memory_order_release, std::memory_order_relaxed)) {
      return;
    }
  }
  // Waiters are queued: add the permits and serve them under the queue lock.
  lock_queue();
  s = state_.load(std::memory_order_relaxed);
  do {
    if (permits_of(s) > kMaxPermits - n) {
      unlock_queue();
      throw std::invalid_argument("Semaphore::release: " + std::to_string(n) + " more permits would exceed kMaxPermits");
    }
  } while (!state_.compare_exchange_weak(s, s + to_units(n), std::memory_order_release, std::memory_order_relaxed));
  if (fair_) {
    Waiter* granted = grant_locked();
    unlock_queue();
    wake_granted(granted);
  } else {
    std::atomic<std::uint32_t>* head = head_to_wake_locked();
    unlock_queue();
    wake(head);
  }
}

// Fair mode, queue lock held: give permits to the head waiters, in order,
// while the head's request fits. Returns the granted nodes, chained through
// `next`, to be woken after the queue lock is dropped.
Semaphore::Waiter* Semaphore::grant_locked() noexcept {
  Waiter* chain = nullptr;
  Waiter** chain_tail = &chain;
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  while (head_ != nullptr && permits_of(s) >= head_->permits) {
    Waiter* h = head_;
    std::uint64_t want = s - to_units(h->permits);
    if (h->next == nullptr) want &= ~kQueued;  // the queue empties
    // Acquire: the permits may have been added by a fast-path release on
    // another thread (before kQueued was set), outside the queue lock; this
    // synchronizes with it, and the store of 1 below passes it on to h.
    // While kQueued is set only queue-lock holders change state_ in fair
    // mode, so this rarely retries; the exchange makes it robust anyway.
    if (!state_.compare_exchange_weak(s, want, std::memory_order_acquire, std::memory_order_relaxed)) continue;
    s = want;
    unlink_locked(*h);
    h->granted = true;
    *chain_tail = h;
    chain_tail = &h->next;
  }
  return chain;
}

// Unfair mode, queue lock held: if the permits now cover the head's
// request, bump its wake-up counter and return its word for wake().
std::atomic<std::uint32_t>* Semaphore::head_to_wake_locked() noexcept {
  if (head_ == nullptr || permits_of(state_.load(std::memory_order_relaxed)) < head_->permits) return nullptr;
  head_->word.fetch_add(1, std::memory_order_release);
  return &head_->word;
}

void Semaphore::wake_granted(Waiter* chain) noexcept {
  while (chain != nullptr) {
    Waiter* next = chain->next;  // read before the store: after it the node may be gone
    std::atomic<std::uint32_t>& word = chain->word;
    word.store(1, std::memory_order_release);
    futex_wake_one(word);  // the benign race of the header
    stats_.record_wake();
    chain = next;
  }
}

void Semaphore::wake(std::atomic<std::uint32_t>* word) noexcept {
  if (word == nullptr) return;
  futex_wake_one(*word);  // the benign race of the header
  stats_.record_wake();
}

}  // namespace locklab
