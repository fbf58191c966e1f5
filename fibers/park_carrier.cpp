#include "fibers/park_carrier.hpp"

#include "primitives/queued_synchronizer_impl.hpp"

namespace locklab {
template class BasicQueuedSynchronizer<fibers::ParkCarrier>;
}  // namespace locklab

namespace locklab::fibers {

ParkResult ParkCarrier::park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                                std::optional<std::chrono::steady_clock::time_point> deadline) noexcept {
  // Read before sleeping, used right after waking on the same OS thread: the
  // fiber cannot migrate while its carrier is blocked in the kernel.
  VirtualThread* self = VirtualThread::current();
  const auto start = self != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const ParkResult r = parking_lot::detail::park_if(address, validate, [] {}, deadline);
  if (self != nullptr && r.status != ParkStatus::kInvalid) {
    self->report(PinningEvent::Kind::kWaitingForLock, lock_, name_, std::chrono::steady_clock::now() - start);
  }
  return r;
}

}  // namespace locklab::fibers
