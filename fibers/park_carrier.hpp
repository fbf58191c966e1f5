// park_carrier.hpp — the waiting policy of a monitor that pins: wait by
// blocking the OS thread in the kernel, in the process-wide ParkingLot
// (primitives/parking_lot.hpp), exactly as every lock in primitives/ waits.
//
// On a plain thread that is all it is. On a CarrierPool carrier it is JDK
// 21's `synchronized` on a virtual thread (JEP 444): the monitor belongs to
// the carrier thread, so the virtual thread can neither wait for it nor hold
// it without its carrier:
//   - waiting: park_if() puts the *carrier* to sleep; no other fiber runs
//     on it meanwhile. Each wait that really queued (validation passed) is
//     reported to the pool's PinningDetector as kWaitingForLock, with its
//     duration.
//   - holding: on_acquired() pins the fiber (VirtualThread::pin), so blocking
//     I/O done while holding blocks the carrier too (kBlockedWhileHolding);
//     on_released() unpins.
// Outside a CarrierPool fiber the hooks find no VirtualThread and do nothing.
//
// Costs: the ParkingLot's (a bucket lock and a futex system call per sleep
// and per wake, ~1-2 us each), a fiber-specific-storage lookup (~20 ns) on
// every acquire and release of the lock (the pin bookkeeping), two clock
// reads per sleep (the event's duration). Memory: the lock's address and
// name (the queue is the global lot's).
//
// Memory orders: none of its own; the ParkingLot's bucket lock orders a
// waiter's validation against an unparker's callback (parking_lot.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "fibers/virtual_thread.hpp"
#include "primitives/parking_lot.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab::fibers {

class ParkCarrier {
 public:
  static constexpr bool kPinsCarrier = true;

  // `lock` and `name` label this lock's pinning reports.
  ParkCarrier(const void* lock, const char* name) noexcept : lock_(lock), name_(name) {}

  // parking_lot::park_if with no before_sleep: blocks the calling OS
  // thread; reports kWaitingForLock on a carrier if it queued.
  ParkResult park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                     std::optional<std::chrono::steady_clock::time_point> deadline) noexcept;
  UnparkResult unpark_one(const void* address,
                          locklab::detail::FunctionRef<std::intptr_t(UnparkResult)> callback) noexcept {
    return parking_lot::detail::unpark_one(address, callback);
  }

  // Pin / unpin the calling fiber (no-ops off a carrier). on_released()
  // must run in the fiber that acquired, as a monitor's exit must run in the
  // thread that entered it; called elsewhere it unpins nothing.
  void on_acquired() noexcept {
    if (VirtualThread* self = VirtualThread::current()) self->pin(lock_, name_);
  }
  void on_released() noexcept {
    if (VirtualThread* self = VirtualThread::current(); self != nullptr && self->pinned()) self->unpin();
  }

 private:
  const void* lock_;
  const char* name_;
};

}  // namespace locklab::fibers

namespace locklab {
// Compiled once, in park_carrier.cpp.
extern template class BasicQueuedSynchronizer<fibers::ParkCarrier>;
}  // namespace locklab
