// futex.hpp — the Linux system call every parking lock in this folder sleeps
// on, wrapped just enough to be typed and to take steady_clock deadlines.
//
// futex_wait(word, expected) sleeps only if *word still equals `expected`
// when the kernel looks (atomically with queuing the caller), which is what
// makes "check the lock word, then sleep" free of lost wake-ups: a waker that
// changes the word before we sleep makes the wait return at once. A wake-up
// carries no information; the waiter must re-check the word.
//
// Why hand-written and not std::atomic::wait: libstdc++'s wait/notify adds
// its own spinning and a process-wide waiter table in front of the futex, so
// a benchmark could not attribute a park or a system call to the lock
// algorithm itself. The locks here want exactly one syscall per park.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace locklab {

enum class FutexWaitResult {
  kWoken,         // woken by futex_wake (or spuriously): re-check the word
  kValueChanged,  // *word != expected when the kernel looked: did not sleep
  kTimedOut,      // the deadline passed
  kInterrupted,   // a signal arrived: re-check and wait again if needed
};

// Sleeps while *word == expected, until woken or (if given) `deadline`
// passes. Private futex: the word must not be shared between processes.
FutexWaitResult futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept;
FutexWaitResult futex_wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                                 std::chrono::steady_clock::time_point deadline) noexcept;

// Wakes up to `count` threads sleeping on `word`; returns how many woke.
int futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept;
inline int futex_wake_one(std::atomic<std::uint32_t>& word) noexcept { return futex_wake(word, 1); }
int futex_wake_all(std::atomic<std::uint32_t>& word) noexcept;

}  // namespace locklab
