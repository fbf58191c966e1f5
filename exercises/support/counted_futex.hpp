// counted_futex.hpp — the futex calls of the exercise futex_mutex: the lab's
// wrappers (primitives/futex.hpp) under the same names, one namespace in,
// each call counted, so that the checks can see how often a student's lock
// enters the kernel without strace and without timing anything.
//
// For the student: call futex_wait / futex_wake_one / futex_wake_all
// unqualified from inside namespace locklab::exercises (the starter is
// there). Name lookup finds these before locklab's own, so the natural call
// is the counted one. Do not write locklab::futex_wait: the checks would not
// see that call, and "waiters sleep" (a contended run must call futex_wait)
// fails for a lock whose sleeps it cannot count.
//
// What the checks read (test-only; nothing here changes what a call does):
// - futex_calls(): how many waits and wakes were made so far, process-wide.
//   A check snapshots it before and after a run on one lock.
// - the rescue: if waiters are still inside lock() long after the holder
//   let go (a lost wake-up), a check calls begin_futex_rescue(): from then
//   on futex_wait returns at once instead of sleeping, and
//   rescue_wake_sleepers() wakes every thread asleep on the word last waited
//   on, so the stuck waiters run again, find the lock free and finish; the
//   check joins them and reports the failure instead of hanging the run.
//   end_futex_rescue() restores sleeping.
//
// Counting costs one relaxed fetch_add on a shared line per call: noise
// next to a system call (~1 us), and no call is made on a fast path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "primitives/futex.hpp"

namespace locklab::exercises {

// Calls made so far through the wrappers below (a snapshot; relaxed).
struct FutexCalls {
  std::uint64_t waits = 0;  // futex_wait and futex_wait_until calls
  std::uint64_t wakes = 0;  // futex_wake, futex_wake_one and futex_wake_all calls
};

namespace counted_futex_detail {
// inline: one instance in the whole program, whichever file includes this.
inline std::atomic<std::uint64_t> waits{0};
inline std::atomic<std::uint64_t> wakes{0};
inline std::atomic<bool> rescue{false};
inline std::atomic<std::atomic<std::uint32_t>*> last_wait_word{nullptr};

inline bool before_wait(std::atomic<std::uint32_t>& word) noexcept {
  waits.fetch_add(1, std::memory_order_relaxed);
  last_wait_word.store(&word, std::memory_order_relaxed);
  return !rescue.load(std::memory_order_relaxed);  // false: do not sleep
}
}  // namespace counted_futex_detail

// Sleeps while word == expected, until woken (primitives/futex.hpp). A
// wake-up says nothing: re-check the word.
inline FutexWaitResult futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  if (!counted_futex_detail::before_wait(word)) return FutexWaitResult::kInterrupted;
  return locklab::futex_wait(word, expected);
}

// The same with a steady_clock deadline (for timed tries, if you add them).
inline FutexWaitResult futex_wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                                        std::chrono::steady_clock::time_point deadline) noexcept {
  if (!counted_futex_detail::before_wait(word)) return FutexWaitResult::kInterrupted;
  return locklab::futex_wait_until(word, expected, deadline);
}

// Wakes up to `count` threads sleeping on `word`; returns how many woke.
inline int futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept {
  counted_futex_detail::wakes.fetch_add(1, std::memory_order_relaxed);
  return locklab::futex_wake(word, count);
}
inline int futex_wake_one(std::atomic<std::uint32_t>& word) noexcept { return futex_wake(word, 1); }
inline int futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
  counted_futex_detail::wakes.fetch_add(1, std::memory_order_relaxed);
  return locklab::futex_wake_all(word);
}

// --- for the checks ---------------------------------------------------------

inline FutexCalls futex_calls() noexcept {
  return {counted_futex_detail::waits.load(std::memory_order_relaxed),
          counted_futex_detail::wakes.load(std::memory_order_relaxed)};
}

inline void begin_futex_rescue() noexcept { counted_futex_detail::rescue.store(true, std::memory_order_relaxed); }

// Wakes every sleeper on the word last waited on (not counted). Call it
// repeatedly during a rescue: a waiter that passed the rescue test just
// before begin_futex_rescue() may go to sleep after a wake.
inline void rescue_wake_sleepers() noexcept {
  if (auto* word = counted_futex_detail::last_wait_word.load(std::memory_order_relaxed)) locklab::futex_wake_all(*word);
}

inline void end_futex_rescue() noexcept { counted_futex_detail::rescue.store(false, std::memory_order_relaxed); }

}  // namespace locklab::exercises
