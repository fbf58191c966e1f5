// count_down_latch.hpp — java.util.concurrent.CountDownLatch: a count that
// threads decrement and others wait to see reach zero, once.
//
// What it guarantees
// ------------------
//   state      count_down()          await()                 await_for(d)
//   count > 1  count - 1             waits                   waits up to d; false if still > 0
//   count = 1  0; wakes every waiter waits                   as await, up to d
//   count = 0  nothing               returns at once         true at once
//
// - Happens-before: everything a thread did before its count_down()
//   happens-before the return of every await() (and true await_for) that
//   saw the count at zero. So the last count_down() publishes the work of
//   every party to every waiter, which is what a latch is for.
// - One shot: the count never goes back up; a latch at zero stays open
//   (use CyclicBarrier for rounds).
// - No lost wake-up, no spurious return: await() returns only once the
//   count is zero; await_for returns false only when the deadline has passed
//   (no earlier) with the count still above zero.
// - Invalid: a negative count (std::invalid_argument, as Java's
//   IllegalArgumentException), or one above kMaxCount (2^62 - 1).
//
// How it works, and why directly on the ParkingLot
// ------------------------------------------------
// Java builds its latch on AQS's shared mode: "acquire" succeeds when the
// state is 0, and a release that brings it to 0 wakes every queued thread.
// Our QueuedSynchronizer counts permits that acquirers *take*, and wakes
// one successor at a time; a latch's waiters take nothing and must all go
// at once. So the latch parks on the ParkingLot itself, the way the
// synchronizer does, with one word:
//   bits 63..1  the count
//   bit 0       kWaiters: some thread has parked (or is about to park) on
//               the latch; set by a waiter before it parks, cleared by the
//               count_down() that reaches zero, which then unpark_all()s.
// An await() sets kWaiters (a compare-exchange that fails if the count
// reached zero meanwhile) and parks validating "count still > 0" under the
// bucket lock. Every update of the word is a read-modify-write, so they are
// totally ordered: either the waiter's kWaiters comes before the last
// count_down(), which sees it and unparks every waiter after the word is
// zero (a waiter validating after that sees zero and does not sleep; one
// validating before is queued and found), or it comes after, and the
// waiter's compare-exchange sees the count at zero and returns. That is
// the lot's no-lost-wake-up argument (parking_lot.hpp, "What it
// guarantees") with the count as the validated condition. A timed-out
// waiter leaves kWaiters set; the last count_down() then unpark_all()s
// nobody, which costs a bucket lock once.
//
// What it costs
// -------------
// count_down(): one compare-exchange; the last one, with waiters, one
// unpark_all (a bucket lock and a futex wake per waiter). await() on an
// open latch: one load. A waiting await(): a compare-exchange and one park
// (a bucket lock, a futex wait on the thread's own Parker). 8 bytes.
//
// Memory orders
// -------------
// count_down() decrements with a release compare-exchange, await() reads
// the word with acquire. The compare-exchanges form one release sequence
// (each read-modify-write continues the sequences before it), so an acquire
// load that reads zero synchronizes with every count_down(), not only the
// last. kWaiters is set with a relaxed compare-exchange: it publishes
// nothing, and the bucket lock orders it against the unparker (the
// validation re-reads the word under that lock).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "primitives/deadline.hpp"

namespace locklab {

class CountDownLatch {
 public:
  static constexpr std::int64_t kMaxCount = (std::int64_t{1} << 62) - 1;

  // Throws std::invalid_argument unless 0 <= count <= kMaxCount.
  explicit CountDownLatch(std::int64_t count);
  // Pre: no thread waits on it.
  ~CountDownLatch() = default;
  CountDownLatch(const CountDownLatch&) = delete;
  CountDownLatch& operator=(const CountDownLatch&) = delete;

  // Decrements the count; at zero, wakes every waiter. At zero already:
  // nothing (Java's).
  void count_down() noexcept {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((w >> kCountShift) == 0) return;
      std::uint64_t next = w - (std::uint64_t{1} << kCountShift);
      const bool last = (next >> kCountShift) == 0;
      if (last) next = 0;  // clears kWaiters: the wake below is for all of them
      if (word_.compare_exchange_weak(w, next, std::memory_order_release, std::memory_order_relaxed)) {
        if (last && (w & kWaiters) != 0) wake_all();
        return;
      }
    }
  }

  // Waits until the count is zero.
  void await() noexcept {
    if (is_open()) return;
    (void)await_slow(std::nullopt);
  }

  // Waits at most `timeout`; true if the count reached zero. timeout <= 0:
  // one look.
  template <class Rep, class Period>
  bool await_for(const std::chrono::duration<Rep, Period>& timeout) noexcept {
    if (is_open()) return true;
    if (timeout <= timeout.zero()) return false;
    return await_slow(detail::steady_deadline_after(timeout));
  }
  template <class Clock, class Duration>
  bool await_until(const std::chrono::time_point<Clock, Duration>& deadline) noexcept {
    if (is_open()) return true;
    return await_slow(detail::to_steady_deadline(deadline));
  }

  // The count now (a snapshot; Java getCount).
  std::int64_t count() const noexcept {
    return static_cast<std::int64_t>(word_.load(std::memory_order_relaxed) >> kCountShift);
  }

 private:
  static constexpr std::uint64_t kWaiters = 1;
  static constexpr unsigned kCountShift = 1;

  // Acquire: pairs with every count_down's release (see the essay).
  bool is_open() const noexcept { return (word_.load(std::memory_order_acquire) >> kCountShift) == 0; }

  bool await_slow(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept;
  void wake_all() noexcept;

  std::atomic<std::uint64_t> word_;
};

}  // namespace locklab
