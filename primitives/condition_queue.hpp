// condition_queue.hpp — the waiting half of a java.util.concurrent Condition,
// written once for the locks that offer Conditions (ReentrantLock and
// ReentrantReadWriteLock's write lock): a FIFO queue of awaiting threads,
// each asleep on a futex word of its own, and the signal that wakes them.
// The lock-specific half (who holds the lock, how it is released fully and
// re-taken with the same hold count, which misuse is refused) stays in each
// lock's Condition, which passes it in as two lambdas.
//
// What it guarantees
// ------------------
// Every member requires the caller to hold the owning lock exclusively: the
// queue is guarded by that lock and has no lock of its own. The owning
// Condition checks that (and throws) before it calls in; this class checks
// nothing.
// - await_until(deadline, release, reacquire): a past deadline returns false
//   at once and calls neither. Otherwise the caller is queued at the tail,
//   `release()` gives the lock up, the thread sleeps until signalled or
//   until the deadline (time_point::max(): no deadline), `reacquire()`
//   takes the lock back, and only then the outcome is decided: true if a
//   signal came (even right at the deadline), false if the time ran out.
//   Either way the lock is held again and the caller is off the queue.
// - signal() dequeues the longest-waiting awaiter, if any, and wakes it;
//   signal_all() every current awaiter, in queue order. A woken awaiter
//   returns only after its reacquire(), so it runs after the signaller
//   releases the lock.
// - No spurious wake-ups: a thread leaves await_until only signalled or past
//   its deadline.
// - length() / empty(): awaiters not yet signalled (exact under the lock).
//
// What it costs
// -------------
// Three words (head, tail, length). An awaiting thread's node lives on its
// own stack (a futex word, two links and a flag): await allocates nothing.
// signal() is O(1) plus one futex wake; signal_all() one wake per awaiter.
// The release and reacquire lambdas are template parameters and inline into
// the caller: using this class costs nothing over writing it in place.
//
// Why it is safe (the ordering argument)
// --------------------------------------
// - The list (head, tail, length, every node's links and `queued` flag) is
//   touched only by the lock's holder, so the lock's own acquire/release
//   happens-before orders every access; none of it needs to be atomic.
// - The one field read without the lock is a node's `word`: the awaiter
//   polls it after release(). signal() stores 1 with release and the awaiter
//   loads it with acquire, and the signaller stores before it calls the
//   futex wake, while the awaiter sleeps only while the word is 0 (the
//   kernel compares it under the futex bucket lock): a signal between the
//   awaiter's load and its futex_wait makes the wait return at once, so no
//   wake-up is lost. The awaiter's later reacquire() orders everything else
//   the signaller wrote.
// - The node outlives signal(): the signaller holds the lock while it
//   touches the node (unlink, store, wake), and the awaiter cannot return,
//   and so destroy its node, before its reacquire() succeeds, i.e. before
//   the signaller has released the lock and finished with the node.
// - A timed-out awaiter decides only after reacquire(): under the lock
//   nobody can signal it concurrently, so "dequeued by a signal" (return
//   true) versus "still queued" (unlink itself, return false) is race-free.
//
// Failure outcomes: none of its own. release and reacquire must not throw
// (the locks' release and acquire do not): a throw between them would leave
// the node queued after its frame is gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace locklab {

class ConditionQueue {
 public:
  using Clock = std::chrono::steady_clock;

  ConditionQueue() = default;
  ConditionQueue(const ConditionQueue&) = delete;
  ConditionQueue& operator=(const ConditionQueue&) = delete;

  // Pre: the caller holds the owning lock (see the essay for the contract).
  // `release()` must give the lock up completely, `reacquire()` take it back
  // as it was; neither may throw.
  template <class Release, class Reacquire>
  bool await_until(Clock::time_point deadline, Release&& release, Reacquire&& reacquire) {
    const bool timed = deadline != Clock::time_point::max();
    if (timed && Clock::now() >= deadline) return false;  // a past deadline: do not wait
    Waiter me;
    push(me);  // while still holding the lock
    release();
    wait_for_signal(me, deadline);
    reacquire();
    return settle(me);
  }

  // Pre: the caller holds the owning lock.
  void signal() noexcept;
  void signal_all() noexcept;
  bool empty() const noexcept { return head_ == nullptr; }
  std::int64_t length() const noexcept { return length_; }

 private:
  // An awaiting thread. Lives on its stack for the whole await; every field
  // is guarded by the lock except `word`, which the awaiter reads while it
  // does not hold the lock.
  struct Waiter {
    std::atomic<std::uint32_t> word{0};  // 0 = waiting, 1 = signalled
    Waiter* prev = nullptr;
    Waiter* next = nullptr;
    bool queued = true;  // still on the list
  };

  void push(Waiter& w) noexcept;
  Waiter* pop() noexcept;
  // Sleeps until w.word is set or the deadline passes (not holding the lock).
  static void wait_for_signal(Waiter& w, Clock::time_point deadline) noexcept;
  // After reacquire(): true if signalled, else unlinks w and returns false.
  bool settle(Waiter& w) noexcept;
  static void wake(Waiter& w) noexcept;

  // Guarded by the owning lock.
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
  std::int64_t length_ = 0;
};

}  // namespace locklab
