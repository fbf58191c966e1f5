#include "fibers/virtual_thread.hpp"

#include <thread>

#include <boost/fiber/fss.hpp>
#include <boost/fiber/operations.hpp>

namespace locklab::fibers {
namespace {

// -1 on every thread but a CarrierPool carrier.
thread_local int t_carrier = -1;

// Keyed by fiber, not thread. The cleanup function does nothing: the record
// lives on the fiber's stack and the Binding clears the slot itself.
boost::fibers::fiber_specific_ptr<VirtualThread>& record_slot() {
  static boost::fibers::fiber_specific_ptr<VirtualThread> slot([](VirtualThread*) {});
  return slot;
}

}  // namespace

// noinline: each call must re-read the thread_local of the thread running
// it *now*, never an address cached before a stack switch (see the header).
[[gnu::noinline]] int VirtualThread::carrier() noexcept { return t_carrier; }

void VirtualThread::set_carrier(int index) noexcept { t_carrier = index; }

[[gnu::noinline]] VirtualThread* VirtualThread::current() noexcept {
  // Off the carriers nothing can be pinned, and asking Boost for fiber
  // storage would create a fiber scheduler on that thread: skip it.
  if (t_carrier < 0) return nullptr;
  return record_slot().get();
}

VirtualThread::Binding::Binding(VirtualThread& self) noexcept { record_slot().reset(&self); }
VirtualThread::Binding::~Binding() { record_slot().reset(nullptr); }

void VirtualThread::report(PinningEvent::Kind kind, const void* lock, const char* lock_name,
                           std::chrono::nanoseconds blocked) const noexcept {
  if (detector_ == nullptr) return;
  detector_->record(PinningEvent{.kind = kind,
                                 .fiber_id = id_,
                                 .lock = lock,
                                 .lock_name = lock_name,
                                 .carrier = carrier(),
                                 .duration = blocked});
}

void VirtualThread::sleep_for(std::chrono::nanoseconds d) {
  VirtualThread* self = current();
  if (self == nullptr || !self->pinned()) {
    // Unmount: the carrier runs other fibers until the timer fires. On a
    // plain thread Boost's default scheduler sleeps the thread instead.
    boost::this_fiber::sleep_for(d);
    return;
  }
  // Pinned: the fiber may not leave this carrier, so the carrier sleeps.
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(d);
  self->report(PinningEvent::Kind::kBlockedWhileHolding, self->pinned_by_, self->pinned_by_name_,
               std::chrono::steady_clock::now() - start);
}

}  // namespace locklab::fibers
