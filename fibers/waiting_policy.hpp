// waiting_policy.hpp — the one line that decides whether a lock pins.
//
// A parking lock has two halves: the *algorithm* (which atomic word, which
// states, who may take the lock when) and the *waiting policy* (where a
// loser sleeps while it waits, and how a releaser wakes it). The fiber
// locks of this folder run primitives/'s algorithm unchanged, the
// QueuedSynchronizer of primitives/queued_synchronizer.hpp, and take the
// waiting as a template argument. In primitives/ waiters are OS threads
// asleep in the kernel (ThreadLot). For a fiber that is exactly the wrong
// thing: the OS thread is its carrier, and a carrier asleep in the kernel
// runs no other fiber.
//
// A waiting policy is a Lot (queued_synchronizer.hpp: the ParkingLot's
// park_if / unpark_one, on an object, one per lock) plus:
//   Policy(lock, name)
//       built by the lock, with the lock's address and name (static
//       storage), for pinning reports.
//   on_acquired(), on_released()
//       bookkeeping hooks called by an owning lock (not by a semaphore) right
//       after acquiring and right before releasing: ParkCarrier pins the
//       fiber there (see virtual_thread.hpp).
//   kPinsCarrier
//       whether waiting blocks the carrier (for names and reports).
//
// Two policies implement it:
//   ParkCarrier (park_carrier.hpp) — the process-wide ParkingLot: block the
//       OS thread. On a carrier that is a *pinned* virtual thread: JDK 21's
//       `synchronized` (JEP 444). Holding such a lock pins the fiber too.
//   ParkFiber (park_fiber.hpp) — a lot of the lock's own whose queue holds
//       suspended fibers; the carrier runs other fibers. JDK 21's
//       ReentrantLock on a virtual thread (an AQS park, which unmounts), and
//       JDK 24's `synchronized` after JEP 491.
// Switching FiberLock<ParkCarrier> to FiberLock<ParkFiber> is the one-line
// experiment of benches/pinning_bench.cpp.
#pragma once

#include <concepts>

#include "primitives/queued_synchronizer.hpp"

namespace locklab::fibers {

template <class P>
concept WaitingPolicy = Lot<P> && std::constructible_from<P, const void*, const char*> && requires(P& p) {
  p.on_acquired();
  p.on_released();
  { P::kPinsCarrier } -> std::convertible_to<bool>;
};

}  // namespace locklab::fibers
