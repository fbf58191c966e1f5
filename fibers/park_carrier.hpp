// park_carrier.hpp — the waiting policy of a monitor that pins: wait by
// blocking the OS thread in the kernel (the futex of primitives/futex.hpp).
//
// On a plain thread this is simply how every parking lock in primitives/
// sleeps. On a CarrierPool carrier it is JDK 21's `synchronized` on a virtual
// thread (JEP 444): the monitor belongs to the carrier thread, so the virtual
// thread can neither wait for it nor hold it without its carrier:
//   - waiting: wait_until() puts the *carrier* to sleep; no other fiber runs
//     on it meanwhile. Each sleep that really happened (the futex did not
//     return at once because the word had changed) is reported to the pool's
//     PinningDetector as kWaitingForLock, with its duration.
//   - holding: on_acquired() pins the fiber (VirtualThread::pin), so blocking
//     I/O done while holding blocks the carrier too (kBlockedWhileHolding);
//     on_released() unpins.
// Outside a CarrierPool fiber the hooks find no VirtualThread and do nothing.
//
// Costs: the futex system call per sleep and per wake (~1-2 us each), a
// fiber-specific-storage lookup (~20 ns) on every acquire and release of the
// lock (the pin bookkeeping), two clock reads per sleep (the event's
// duration). Memory: none (the policy is stateless; the word is the lock's).
//
// Memory orders: none of its own; the futex compares the word inside the
// kernel, which is what makes check-then-sleep free of lost wake-ups (see
// primitives/futex.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "fibers/virtual_thread.hpp"
#include "primitives/futex.hpp"

namespace locklab::fibers {

class ParkCarrier {
 public:
  static constexpr bool kPinsCarrier = true;

  // Blocks the calling OS thread while word == expected (see
  // waiting_policy.hpp for the contract); reports kWaitingForLock on a
  // carrier if it really slept.
  bool wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                  std::chrono::steady_clock::time_point deadline, const void* lock, const char* name) noexcept;

  void wake_one(std::atomic<std::uint32_t>& word) noexcept { futex_wake_one(word); }
  void wake_all(std::atomic<std::uint32_t>& word) noexcept { futex_wake_all(word); }

  // Pin / unpin the calling fiber (no-ops off a carrier). on_released()
  // must run in the fiber that acquired, as a monitor's exit must run in the
  // thread that entered it; called elsewhere it unpins nothing.
  void on_acquired(const void* lock, const char* name) noexcept {
    if (VirtualThread* self = VirtualThread::current()) self->pin(lock, name);
  }
  void on_released() noexcept {
    if (VirtualThread* self = VirtualThread::current(); self != nullptr && self->pinned()) self->unpin();
  }
};

}  // namespace locklab::fibers
