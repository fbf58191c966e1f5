// mcs_lock.hpp — Mellor-Crummey & Scott's queue lock (1991): waiters form a
// linked queue of nodes, each spins on a flag in its OWN node, and the holder
// hands the lock to its successor by clearing that one flag.
//
// What it guarantees
// ------------------
// Mutual exclusion and FIFO order: threads acquire in the order their
// exchange on `tail_` took effect. State:
//   tail_        | meaning
//   nullptr      | unlocked
//   the holder's | locked, nobody queued
//   another node | locked, waiters queued behind the holder up to tail_
// No timed tries: leaving the middle of an MCS queue needs the abortable
// variants (Scott 2002), which this teaching version does not implement.
//
// Per-thread queue nodes
// ----------------------
// The textbook API passes a node to lock() and unlock(); the Lockable API
// cannot. Here every thread owns a small pool of nodes (thread_local,
// kNodesPerThread of them inline, more from the heap if a thread holds more
// McsLocks at once), lock() takes one, and the holder's node is remembered in
// the lock itself (`head_`), so unlock() finds it without a search. A thread
// may therefore hold several McsLocks at once, in any order. A node is only
// referenced by its successor until the hand-off, so unlock() returns it to
// the pool at once.
//
// What is invalid
// ---------------
// - unlock() by a thread that does not hold the lock: it would release the
//   holder's node into the wrong thread's pool and corrupt both. Debug
//   builds assert that the lock is held and that head_ came from the caller's
//   pool; release builds do not check (undefined behaviour).
// - A thread exiting while it holds an McsLock (its pool, and so the
//   holder's node, dies with it): undefined behaviour, as for std::mutex.
// - Recursive lock() deadlocks.
//
// Cost and when to use it
// -----------------------
// Uncontended: one `xchg` on tail_ to lock, one `cmpxchg` to unlock (plus
// taking and returning a pool node: thread-local, no atomics). Contended: a
// hand-off touches exactly one remote line (the successor's flag), and each
// waiter spins on a line nobody else reads, so traffic stays O(1) per
// hand-off at any number of waiters: the lock of choice for many cores. On
// an oversubscribed machine it shares the ticket lock's cliff: the lock goes
// to the NEXT thread in the queue whether or not it is running.
//
// Memory orders
// -------------
// - lock: the node's fields are initialised (relaxed) and published by
//   tail_.exchange(node, acq_rel): release so a successor that reads our
//   node from tail_ sees them initialised before it writes our `next`;
//   acquire so that, if the queue was empty, we synchronise with the release
//   CAS of the last unlock (its critical section happens-before ours).
// - pred->next.store(node, release) links us; the holder reads it with
//   acquire, so our initialised `wait` flag is visible before the holder
//   clears it (coherence would give the same, but the pair makes it explicit).
// - waiting: node->wait.load(acquire) until kGranted; it reads the holder's
//   store (or exchange) of kGranted with release in unlock: the hand-off
//   carries the critical section. The parking variant's exchange needs no
//   acquire: the value it returns only decides whether to wake.
// - unlock with no visible successor: tail_.compare_exchange(node -> nullptr,
//   release) pairs with the next arrival's acquire exchange. On failure
//   (relaxed) a successor is between its exchange and its link: wait for
//   next with acquire loads.
// - head_ is a plain field: only the holder writes it (after acquiring) and
//   reads it (in unlock, before releasing), so the lock itself orders every
//   access.
//
// Spin, then park: McsParkingLock
// --------------------------------
// The same queue, but a waiter that has polled its flag kSpinPolls times
// parks on it (a futex on its own node's word): flag states
//   kGranted 0 | the predecessor handed the lock over
//   kWaiting 1 | queued, spinning
//   kParked  2 | queued, asleep in futex_wait (or about to be)
// The waiter moves 1 -> 2 with a CAS and sleeps only while the word is 2;
// the releaser hands over with exchange(0) and calls futex_wake only if it
// saw 2. A hand-off therefore never loses a wake-up (the kernel re-checks
// the word) and costs no system call when the successor is still spinning.
// Order stays FIFO. What parking buys on an oversubscribed machine: queued
// waiters stop burning the cores the holder and the next waiter need, so
// throughput no longer collapses to one hand-off per scheduler time slice.
// What it cannot buy: the lock still goes to the NEXT waiter, which by then
// is usually asleep, so each hand-off waits for a futex wake-up to run
// (~35 us on this lab's VM, physical_limits' FutexWakeToRun) while
// std::mutex lets the running thread barge in. FIFO costs that; the locks
// suite shows how much.
// kSpinPolls = 200 polls (~4 us at the measured 20 ns per pause): the
// initial budget of AdaptiveMutex, about a tenth of the park + wake round
// trip it saves when the hand-off comes quickly.
// The releaser's futex_wake may reach a node whose owner has already woken
// spuriously, taken the lock and reused the node: a spurious wake-up for a
// later waiter on that word, which every futex waiter here tolerates (they
// re-check their word in a loop), and never a memory access (the kernel
// only hashes the address of a private futex).
//
// Statistics: slow path only (contended acquires; spins = polls of the own
// flag; parks and wakes for McsParkingLock; waiting for a successor's link
// in unlock is not counted).
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/lock_stats.hpp"

namespace locklab {

namespace detail {

struct McsNodePool;

// The values of McsNode::wait (see "Spin, then park").
inline constexpr std::uint32_t kMcsGranted = 0;
inline constexpr std::uint32_t kMcsWaiting = 1;
inline constexpr std::uint32_t kMcsParked = 2;

struct alignas(kCacheLineSize) McsNode {
  std::atomic<McsNode*> next{nullptr};
  // kWaiting or kParked while the owner must wait; kGranted once it holds
  // the lock (see "Spin, then park"). 32 bits: it is a futex word.
  std::atomic<std::uint32_t> wait{0};
  McsNodePool* pool = nullptr;      // the pool it belongs to (debug check)
  McsNode* free_next = nullptr;     // pool free list (owner thread only)
  bool on_heap = false;             // beyond the inline nodes
};

// A thread's nodes. Touched only by its thread (no atomics).
struct McsNodePool {
  static constexpr int kNodesPerThread = 8;  // locks held at once without a heap node

  McsNodePool() noexcept {
    for (int i = 0; i < kNodesPerThread; ++i) {
      nodes[i].pool = this;
      nodes[i].free_next = i + 1 < kNodesPerThread ? &nodes[i + 1] : nullptr;
    }
    free = &nodes[0];
  }
  McsNodePool(const McsNodePool&) = delete;
  McsNodePool& operator=(const McsNodePool&) = delete;

  McsNode* take() noexcept {
    if (McsNode* n = free) {
      free = n->free_next;
      return n;
    }
    return take_from_heap();
  }
  void give(McsNode* n) noexcept {
    if (n->on_heap) return give_to_heap(n);
    n->free_next = free;
    free = n;
  }

  McsNode* take_from_heap() noexcept;
  static void give_to_heap(McsNode* n) noexcept;

  McsNode nodes[kNodesPerThread];
  McsNode* free = nullptr;
};

inline McsNodePool& this_thread_mcs_pool() noexcept {
  thread_local McsNodePool pool;
  return pool;
}

}  // namespace detail

class McsLock {
 public:
  // How a queued waiter waits: kSpin polls its flag until the hand-off (the
  // textbook lock); kSpinThenPark parks after kSpinPolls (McsParkingLock).
  enum class Waiting : std::uint8_t { kSpin, kSpinThenPark };
  static constexpr std::int64_t kSpinPolls = 200;

  explicit McsLock(Waiting waiting = Waiting::kSpin) noexcept : waiting_(waiting) {}
  McsLock(const McsLock&) = delete;
  McsLock& operator=(const McsLock&) = delete;

  // Queues the caller and waits (spinning on its own node) until it holds
  // the lock. FIFO. Precondition: the caller does not hold this lock.
  void lock() noexcept {
    detail::McsNodePool& pool = detail::this_thread_mcs_pool();
    detail::McsNode* node = pool.take();
    node->next.store(nullptr, std::memory_order_relaxed);
    node->wait.store(detail::kMcsWaiting, std::memory_order_relaxed);
    detail::McsNode* pred = tail_.exchange(node, std::memory_order_acq_rel);
    if (pred != nullptr) lock_slow(node, pred);
    head_ = node;
  }

  // Takes the lock only if nobody holds it or waits for it; never waits.
  bool try_lock() noexcept {
    if (tail_.load(std::memory_order_relaxed) != nullptr) return false;
    detail::McsNodePool& pool = detail::this_thread_mcs_pool();
    detail::McsNode* node = pool.take();
    node->next.store(nullptr, std::memory_order_relaxed);
    node->wait.store(detail::kMcsWaiting, std::memory_order_relaxed);
    detail::McsNode* expected = nullptr;
    if (tail_.compare_exchange_strong(expected, node, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      head_ = node;
      return true;
    }
    pool.give(node);
    return false;
  }

  // Hands the lock to the next queued thread, or frees it. Precondition: the
  // caller holds it (see "What is invalid"). May wait briefly (spinning) for
  // a successor that has queued but not yet linked itself.
  void unlock() noexcept {
    detail::McsNode* node = head_;
    assert(node != nullptr && tail_.load(std::memory_order_relaxed) != nullptr && "McsLock::unlock: lock not held");
    assert(node->pool == &detail::this_thread_mcs_pool() && "McsLock::unlock: held by another thread");
    detail::McsNode* succ = node->next.load(std::memory_order_acquire);
    if (succ == nullptr) {
      detail::McsNode* expected = node;
      if (tail_.compare_exchange_strong(expected, nullptr, std::memory_order_release, std::memory_order_relaxed)) {
        detail::this_thread_mcs_pool().give(node);
        return;
      }
      succ = wait_for_successor(node);
    }
    if (waiting_ == Waiting::kSpin) {
      succ->wait.store(detail::kMcsGranted, std::memory_order_release);
    } else if (succ->wait.exchange(detail::kMcsGranted, std::memory_order_release) == detail::kMcsParked) {
      wake(succ);
    }
    detail::this_thread_mcs_pool().give(node);
  }

  // A racy hint: true if some thread held or awaited the lock at the load.
  bool is_locked() const noexcept { return tail_.load(std::memory_order_relaxed) != nullptr; }

  LockStatsSnapshot stats() const noexcept { return stats_.snapshot(); }

 private:
  void lock_slow(detail::McsNode* node, detail::McsNode* pred) noexcept;
  static detail::McsNode* wait_for_successor(detail::McsNode* node) noexcept;
  void wake(detail::McsNode* succ) noexcept;

  alignas(kCacheLineSize) std::atomic<detail::McsNode*> tail_{nullptr};
  detail::McsNode* head_ = nullptr;  // the holder's node; see "Memory orders"
  const Waiting waiting_;
  LockStats stats_;
};

// The MCS queue whose waiters spin kSpinPolls polls, then park (see "Spin,
// then park" above): a type of its own so that tests and benchmarks can name
// it. FIFO, no timed tries, same invalid uses as McsLock.
class McsParkingLock : public McsLock {
 public:
  McsParkingLock() noexcept : McsLock(Waiting::kSpinThenPark) {}
};

}  // namespace locklab
