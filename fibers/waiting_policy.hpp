// waiting_policy.hpp — the one line that decides whether a lock pins.
//
// A parking lock has two halves: the *algorithm* (which atomic word, which
// states, who may take the lock when) and the *waiting policy* (what a loser
// does while it waits, and how a releaser wakes it). In primitives/ the
// waiting policy is always the Linux futex: the waiting OS thread sleeps in
// the kernel. For a fiber that is exactly the wrong thing: the OS thread is
// its carrier, and a carrier asleep in the kernel runs no other fiber.
//
// So the fiber locks of this folder take the policy as a template argument,
// and a policy is a futex-shaped interface:
//   wait_until(word, expected, deadline, lock, name)
//       sleeps while word == expected (checked atomically with going to
//       sleep, so a change + wake in between is never lost), until woken or
//       `deadline` (steady_clock; time_point::max() = none). Returns false
//       only if the deadline passed. May return spuriously: callers re-check.
//   wake_one(word), wake_all(word)
//       wakes one / every waiter of `word`. Call after changing the word.
//   on_acquired(lock, name), on_released()
//       bookkeeping hooks called by an owning lock (not by a semaphore) right
//       after acquiring and right before releasing: ParkCarrier pins the
//       fiber there (see virtual_thread.hpp).
//   kPinsCarrier
//       whether waiting blocks the carrier (for names and reports).
//
// Two policies implement it:
//   ParkCarrier (park_carrier.hpp) — futex: block the OS thread. On a
//       carrier that is a *pinned* virtual thread: JDK 21's `synchronized`
//       (JEP 444). Holding such a lock pins the fiber too.
//   ParkFiber (park_fiber.hpp) — suspend the fiber on a fiber-aware wait
//       queue; the carrier runs other fibers. JDK 21's ReentrantLock on a
//       virtual thread, and JDK 24's `synchronized` after JEP 491.
// Switching FiberLock<ParkCarrier> to FiberLock<ParkFiber> is the one-line
// experiment of benches/pinning_bench.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>

namespace locklab::fibers {

template <class P>
concept WaitingPolicy = requires(P& p, std::atomic<std::uint32_t>& word, std::uint32_t expected,
                                 std::chrono::steady_clock::time_point deadline, const void* lock, const char* name) {
  { p.wait_until(word, expected, deadline, lock, name) } -> std::same_as<bool>;
  p.wake_one(word);
  p.wake_all(word);
  p.on_acquired(lock, name);
  p.on_released();
  { P::kPinsCarrier } -> std::convertible_to<bool>;
};

}  // namespace locklab::fibers
