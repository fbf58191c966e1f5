// park_fiber.hpp — the waiting policy of a lock that does not pin: wait by
// suspending the fiber, so its carrier runs other fibers meanwhile.
//
// This is a futex for fibers: wait_until(word, expected) checks the word and
// joins a wait queue under one fiber-aware mutex, and wake_one() passes
// through the same mutex before notifying, so a waker that changed the word
// either runs before the waiter's check (which then sees the change and does
// not sleep) or after the waiter is queued (and wakes it): no lost wake-ups,
// the same argument as the kernel's futex, with boost::fibers::mutex playing
// the hash-bucket lock. The queue is a boost::fibers::condition_variable: a
// waiting fiber is suspended and its context parked in the queue; a wake
// makes it ready again on *its* carrier's scheduler (Boost's
// schedule_from_remote when the waker runs on another carrier), from where an
// idle carrier may steal it. A fiber can therefore wait on carrier 0 and
// resume on carrier 1; nothing here depends on the OS thread.
//
// In Java: a virtual thread blocked in ReentrantLock.lock() (an AQS park,
// which unmounts) or, since JDK 24 (JEP 491), in `synchronized`. It also
// works from a plain thread (Boost parks the thread on its own scheduler),
// and never reports pinning: nothing here blocks a carrier, except for the
// nanoseconds of Boost's internal spinlocks.
//
// Costs: a boost::fibers::mutex + condition_variable per lock (~100 bytes),
// a fiber switch per sleep and per wake-up (~100-200 ns, no system call
// unless the woken fiber's carrier is itself asleep and must be notified).
// Nothing on the lock's uncontended path (the hooks are empty).
//
// Memory orders: the word is re-read under the mutex with seq_cst. A lock's
// protocol would be fine with relaxed (the mutex orders the waker's change
// before the check), but a semaphore's waiter-count handshake (see
// semaphore.hpp) needs this load in the single total order of seq_cst
// operations; on x86 a seq_cst load is a plain load, so it costs nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>

namespace locklab::fibers {

class ParkFiber {
 public:
  static constexpr bool kPinsCarrier = false;

  // Suspends the calling fiber while word == expected (see
  // waiting_policy.hpp for the contract). `lock` and `name` are unused: a
  // fiber that suspends pins nothing.
  bool wait_until(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                  std::chrono::steady_clock::time_point deadline, const void* lock, const char* name);

  void wake_one(std::atomic<std::uint32_t>& word);
  void wake_all(std::atomic<std::uint32_t>& word);

  void on_acquired(const void*, const char*) noexcept {}
  void on_released() noexcept {}

 private:
  boost::fibers::mutex mutex_;
  boost::fibers::condition_variable queue_;
};

}  // namespace locklab::fibers
