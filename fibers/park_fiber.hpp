// park_fiber.hpp — the waiting policy of a lock that does not pin: wait by
// suspending the fiber, so its carrier runs other fibers meanwhile.
//
// This is a ParkingLot for fibers, one per lock: a single "bucket" (a
// boost::fibers::mutex) guarding a FIFO of waiters, each tagged with the
// address it waits on (a lock's synchronizer parks on two: its word and its
// successor slot). park_if() runs validate() and queues under the mutex;
// unpark_one() dequeues, runs its callback and notifies under the same
// mutex, so the ParkingLot's no-lost-wake-up argument carries over word for
// word (parking_lot.hpp, "What it guarantees"). Each waiter waits on a
// boost::fibers::condition_variable of its own, on its stack: a suspended
// fiber's context is parked there, and a notify makes it ready again on
// *its* carrier's scheduler (Boost's schedule_from_remote when the waker
// runs on another carrier), from where an idle carrier may steal it. A fiber
// can therefore wait on carrier 0 and resume on carrier 1; nothing here
// depends on the OS thread.
//
// In Java: a virtual thread blocked in ReentrantLock.lock() (an AQS park,
// which unmounts) or, since JDK 24 (JEP 491), in `synchronized`. It also
// works from a plain thread (Boost parks the thread on its own scheduler),
// and never reports pinning: nothing here blocks a carrier, except for the
// nanoseconds of Boost's internal spinlocks.
//
// Guarantees: FIFO per address; a waiter that an unparker dequeued returns
// kUnparked even if its deadline passed meanwhile, and one that timed out
// has left the queue before it returns kTimedOut (the flag and the queue
// are read and written only under the mutex). time_to_be_fair is never
// reported (the synchronizer keeps its own fairness clock).
// Costs: a boost::fibers::mutex per lock (~50 bytes) and an intrusive list
// (no allocation: the waiter lives on its fiber's stack), a fiber switch per
// sleep and per wake-up (~100-200 ns, no system call unless the woken
// fiber's carrier is itself asleep and must be notified), a scan of the
// queue for the address on each unpark (the queue holds this lock's waiters
// only). Nothing on the lock's uncontended path (the hooks are empty).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/intrusive/list.hpp>

#include "primitives/parking_lot.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab::fibers {

class ParkFiber {
 public:
  static constexpr bool kPinsCarrier = false;

  // `lock` and `name` are unused: a fiber that suspends pins nothing.
  ParkFiber(const void*, const char*) noexcept {}
  ParkFiber(const ParkFiber&) = delete;
  ParkFiber& operator=(const ParkFiber&) = delete;
  // Pre: no fiber is queued.
  ~ParkFiber() = default;

  // The ParkingLot's contracts (parking_lot.hpp), with the calling fiber
  // suspended instead of the thread.
  ParkResult park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                     std::optional<std::chrono::steady_clock::time_point> deadline);
  UnparkResult unpark_one(const void* address, locklab::detail::FunctionRef<std::intptr_t(UnparkResult)> callback);

  void on_acquired() noexcept {}
  void on_released() noexcept {}

 private:
  struct Waiter : boost::intrusive::list_base_hook<> {
    explicit Waiter(const void* a) noexcept : address(a) {}
    const void* address;
    boost::fibers::condition_variable wake;
    bool unparked = false;      // written by the unparker under mutex_
    std::intptr_t token = 0;    // likewise
  };

  boost::fibers::mutex mutex_;
  boost::intrusive::list<Waiter> queue_;  // guarded by mutex_
};

}  // namespace locklab::fibers

namespace locklab {
// Compiled once, in park_fiber.cpp.
extern template class BasicQueuedSynchronizer<fibers::ParkFiber>;
}  // namespace locklab
