// carrier_pool.hpp — N carrier OS threads running Boost.Fiber's work-stealing
// scheduler: the lab's ForkJoinPool of virtual-thread carriers.
//
// What it is
// ----------
// spawn(fn) starts a fiber (the lab's virtual thread) running fn; fibers are
// multiplexed M:N on the carriers: a fiber that sleeps, waits for a
// fiber-parking lock or a channel, suspends and its carrier runs another
// fiber, and an idle carrier steals ready fibers from a busy one, so a fiber
// may resume on a different carrier than the one it suspended on (it
// *migrates*). join() waits until every spawned fiber has returned. This is
// Java's virtual-thread scheduler (a ForkJoinPool of `availableProcessors`
// carriers, JEP 444) with Boost fibers as the continuations.
//
// Each fiber gets a VirtualThread record (id, pin depth; see
// virtual_thread.hpp) and reports pinning to this pool's PinningDetector.
//
// Boost 1.74's traps, and what this class does about each
// --------------------------------------------------------
// 1. boost::fibers::algo::work_stealing keeps *static* state: a process-wide
//    scheduler table sized by the first pool's carrier count and a static
//    counter that hands every new carrier the next slot. A second pool in the
//    same process (even after the first is gone, even of the same size)
//    writes past the end of that table. So: at most one work-stealing pool
//    per process, ever. The constructor enforces it (std::logic_error), and
//    work_stealing_used() lets a test skip instead. Benchmarks run each
//    configuration in a process of its own (benches/pinning_bench.cpp
//    re-executes itself per point); ctest runs each test case in its own
//    process (gtest_discover_tests), so each test may build its own pool.
// 2. work_stealing(1) livelocks: a carrier looking for work draws a random
//    victim "other than me" until it finds one, forever when it is alone.
//    A one-carrier pool therefore uses round_robin (no stealing is needed with
//    one carrier), which has no static state: any number per process.
// 3. shared_work (one global ready queue) is not offered: a fiber that went
//    to sleep on a carrier is woken by that carrier's timer only, and a
//    carrier sleeping in the shared queue's condition variable may oversleep
//    it, so sleepers starve under load.
// 4. Idle carriers spin unless suspended: work_stealing(n, suspend=false)
//    makes every idle carrier poll for work at 100% CPU, which on a 2-core
//    machine steals the cores the other processes (and the measurement)
//    need. Idle::kSuspend (the default) sleeps an idle carrier on a condition
//    variable until its next timer or a remote wake-up; Idle::kSpin is
//    there to show the difference (and steals more eagerly).
// 4b.But a suspended carrier is woken only by its *own* timers and by fibers
//    of its own being made ready from another thread: nothing wakes it when
//    work piles up on a sibling (Boost has no ForkJoinPool-style signalWork).
//    Once a carrier's queues run dry it can sleep for the rest of the run
//    while its sibling has hundreds of ready fibers: measured in the pinning
//    suite, 2 pinned carriers did the work of 1 after ~200 ms. So each
//    carrier's main fiber waits for spawns with a timeout (steal_tick, 1 ms
//    by default): the timer wakes an idle carrier 1,000 times a second
//    (a few microseconds each) and a carrier that wakes with nothing to run
//    steals. steal_tick = 0 restores Boost's behaviour.
// 5. thread_locals and std::this_thread::get_id() read before a suspension
//    describe the old carrier after a migration: per-fiber state lives in
//    VirtualThread (fiber-specific storage), see virtual_thread.hpp.
// 6. pooled_fixedsize_stack is not offered: its boost::pool is not
//    thread-safe, and a migrated fiber's stack is freed on another carrier.
//
// Stacks
// ------
// Stack::kProtected (default): protected_fixedsize_stack, an mmap with a
// guard page below the stack, so an overflow faults at once (SIGSEGV)
// instead of silently corrupting a neighbour; costs an mmap + mprotect per
// fiber (a few microseconds). Stack::kFixed: fixedsize_stack (malloc), a bit
// cheaper, no guard. stack_bytes is virtual size; pages are touched lazily,
// so 1,000 fibers x 64 KiB reserve 64 MiB but use far less.
//
// How spawn reaches the carriers
// ------------------------------
// From a thread outside the pool, spawn() pushes the function into a
// fiber-aware MPMC channel; each carrier's main fiber (pinned to its carrier
// by Boost) pops from it and launches the fiber locally, from where others
// may steal it. From a fiber already in the pool, spawn() launches directly
// on the current carrier. join() counts outstanding fibers with an atomic
// and sleeps on a std::condition_variable, so it must be called from outside
// the pool (a fiber calling it would block its carrier: pinning).
//
// Memory orders (in carrier_pool.cpp): the outstanding-fiber count is
// incremented relaxed before the push (the channel's own locking publishes
// the task) and decremented acq_rel at each fiber's end, so a join() that
// sees 0 (acquire) sees everything the fibers wrote.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "fibers/pinning_detector.hpp"

namespace locklab::fibers {

class CarrierPool {
 public:
  enum class Idle : std::uint8_t { kSuspend, kSpin };
  enum class Stack : std::uint8_t { kProtected, kFixed };

  struct Options {
    int carriers = 2;
    Idle idle = Idle::kSuspend;
    Stack stack = Stack::kProtected;
    std::size_t stack_bytes = 64 * 1024;
    std::size_t keep_pinning_events = 8;  // PinningDetector's `keep`
    std::chrono::microseconds steal_tick{1000};  // 0: idle carriers sleep until woken (trap 4b)
  };

  // Starts the carriers. Throws std::invalid_argument if carriers < 1 or
  // stack_bytes < 16 KiB, std::logic_error if carriers > 1 and a
  // work-stealing pool was already created in this process (trap 1).
  explicit CarrierPool(Options options);
  explicit CarrierPool(int carriers) : CarrierPool(Options{.carriers = carriers}) {}

  // join()s (ignoring a stored exception), then stops and joins the
  // carriers. Hangs if a fiber never returns, as joining its thread would.
  ~CarrierPool();

  CarrierPool(const CarrierPool&) = delete;
  CarrierPool& operator=(const CarrierPool&) = delete;

  // Starts a fiber running fn. Callable from any thread and from the pool's
  // own fibers. May block (suspend, for a fiber) briefly when 1,024 spawns
  // are already queued and not yet picked up. An exception escaping fn is
  // kept (the first one) and rethrown by join(). Throws std::bad_alloc.
  void spawn(std::function<void()> fn);

  // Waits until every fiber spawned so far has returned, then rethrows the
  // first exception a fiber let escape (once). Must not be called from a
  // fiber of this pool (std::logic_error). The pool stays usable.
  void join();

  // Like join() but gives up after `timeout` and returns false (fibers
  // still running): the watchdog tests use it to prove a stall.
  bool join_for(std::chrono::milliseconds timeout);

  int carriers() const noexcept;
  // True when the pool runs Boost's work_stealing (carriers > 1).
  bool work_stealing() const noexcept;
  std::uint64_t spawned() const noexcept;
  PinningDetector& detector() noexcept;

  // Whether this process already created a work-stealing pool (and so
  // cannot create another: trap 1).
  static bool work_stealing_used() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace locklab::fibers
