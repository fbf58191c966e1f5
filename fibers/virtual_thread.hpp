// virtual_thread.hpp — what a fiber knows about itself that a Java virtual
// thread knows: its id, whether it is pinned to its carrier, and how to block
// (sleep, "do I/O") the way the JVM does: unmount if you can, block the
// carrier if you are pinned, and say so.
//
// Every fiber a CarrierPool starts gets one VirtualThread record, living on
// that fiber's own stack for the fiber's whole life; VirtualThread::current()
// finds it through Boost's *fiber*-specific storage.
//
// Why not thread_local (the migration trap)
// -----------------------------------------
// Under the work-stealing scheduler a fiber that suspends (sleeps, waits for
// a lock) may resume on another carrier thread. Anything it read from a
// thread_local, or from std::this_thread::get_id(), before the suspension
// describes the *old* carrier afterwards. Worse, the compiler may compute a
// thread_local's address once per function and keep it across a call that
// happens to switch stacks, so even re-reading the same thread_local in one
// function can read the old carrier's copy. Hence:
//   - per-fiber state (id, pin depth) lives here, reached through
//     boost::fibers::fiber_specific_ptr, which is keyed by fiber, not thread;
//   - the one thread-level fact, carrier(), is an out-of-line function that
//     reads its thread_local afresh on every call, and its value is valid
//     only until the caller's next suspension. Java has the same split:
//     Thread.currentThread() is the virtual thread, the carrier is hidden.
//
// Pinning
// -------
// pin()/unpin() keep a per-fiber depth: how many carrier-parking locks
// (FiberLock<ParkCarrier>, the lab's pre-JDK-24 `synchronized`) the fiber
// holds. While the depth is > 0 the fiber must not suspend: the lock it holds
// is conceptually owned by the carrier thread, and if the fiber left, another
// fiber on the same carrier that wants the lock would block the carrier
// forever (the deadlock tests/fibers/fiber_lock_test.cpp demonstrates). So
// sleep_for() when pinned blocks the carrier thread instead of the fiber and
// reports a kBlockedWhileHolding event to the pool's PinningDetector, the way
// the JVM parks the carrier of a pinned virtual thread and emits
// jdk.VirtualThreadPinned.
//
// Memory orders: none. A record is touched only by its own fiber (a single
// writer), and a fiber that migrates is handed from one carrier to the other
// through the scheduler's synchronised ready queues, which order everything
// the fiber wrote on the old carrier before it runs on the new one.
#pragma once

#include <chrono>
#include <cstdint>

#include "fibers/pinning_detector.hpp"

namespace locklab::fibers {

class VirtualThread {
 public:
  // A record for fiber number `id` reporting to `detector` (may be null:
  // nothing is reported). CarrierPool creates these; tests may too.
  VirtualThread(std::uint64_t id, PinningDetector* detector) noexcept : id_(id), detector_(detector) {}
  VirtualThread(const VirtualThread&) = delete;
  VirtualThread& operator=(const VirtualThread&) = delete;

  // The record of the fiber running the caller; nullptr on a thread that is
  // not a CarrierPool carrier (a plain thread cannot be pinned: it is its own
  // carrier) or in a fiber that no pool started. Costs a map lookup in
  // Boost's fiber-specific storage (~20 ns) on a carrier, a thread_local
  // read elsewhere.
  static VirtualThread* current() noexcept;

  // Index (0-based) of the CarrierPool carrier thread running the caller, or
  // -1 if the caller is not on a carrier. Valid until the caller's next
  // suspension, after which the fiber may run on another carrier.
  static int carrier() noexcept;

  // Blocks the caller for `d`, like Thread.sleep or blocking socket I/O on
  // a virtual thread: an unpinned fiber suspends (its carrier runs other
  // fibers); a pinned fiber blocks its carrier thread, and a
  // kBlockedWhileHolding event is reported; a plain thread sleeps.
  static void sleep_for(std::chrono::nanoseconds d);

  std::uint64_t id() const noexcept { return id_; }
  PinningDetector* detector() const noexcept { return detector_; }

  // How many carrier-parking locks this fiber holds; pinned() iff > 0.
  int pin_depth() const noexcept { return pin_depth_; }
  bool pinned() const noexcept { return pin_depth_ > 0; }

  // Called by a carrier-parking lock after it was acquired / before it is
  // released. `lock` and `lock_name` (static storage) name the outermost
  // pinning lock in events. Precondition of unpin(): pinned().
  void pin(const void* lock, const char* lock_name) noexcept {
    if (pin_depth_++ == 0) {
      pinned_by_ = lock;
      pinned_by_name_ = lock_name;
    }
  }
  void unpin() noexcept { --pin_depth_; }

  // Reports an event of this fiber to its detector (if any), on the
  // current carrier.
  void report(PinningEvent::Kind kind, const void* lock, const char* lock_name,
              std::chrono::nanoseconds blocked) const noexcept;

  // Makes `self` the record VirtualThread::current() returns in the calling
  // fiber, until the Binding is destroyed (at the end of the fiber's body).
  class Binding {
   public:
    explicit Binding(VirtualThread& self) noexcept;
    ~Binding();
    Binding(const Binding&) = delete;
    Binding& operator=(const Binding&) = delete;
  };

  // Marks the calling OS thread as carrier number `index` (-1: none). Called
  // by CarrierPool at the start of each carrier thread.
  static void set_carrier(int index) noexcept;

 private:
  std::uint64_t id_;
  PinningDetector* detector_;
  int pin_depth_ = 0;
  const void* pinned_by_ = nullptr;
  const char* pinned_by_name_ = "";
};

}  // namespace locklab::fibers
