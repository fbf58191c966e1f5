// pinning_detector.hpp — the lab's `jdk.VirtualThreadPinned` event and
// `-Djdk.tracePinnedThreads`: it counts every time a fiber blocks the carrier
// thread it runs on, and keeps the first few occurrences (which fiber, which
// lock, which carrier, how long) so a student can see *where* it happened.
//
// What "pinning" is, in Java and here
// -----------------------------------
// A virtual thread (JEP 444) is a continuation that runs mounted on a
// carrier OS thread; when it blocks in a j.u.c lock, a sleep or socket I/O it
// unmounts and the carrier runs someone else. It cannot unmount while it is
// *pinned*: before JDK 24 that meant inside a `synchronized` block (the
// monitor was owned by the carrier thread) or a native frame. A pinned
// virtual thread that blocks blocks its carrier; with only a few carriers,
// every other virtual thread, even one that never touches the lock, waits.
// JDK 21 reports this with the JFR event jdk.VirtualThreadPinned (fired when
// a pinned park lasts longer than 20 ms) and, with -Djdk.tracePinnedThreads,
// a stack trace. JEP 491 (JDK 24) made monitors virtual-thread-owned, so
// `synchronized` no longer pins; the flag was removed with it.
//
// Here a Boost fiber plays the virtual thread and a CarrierPool thread the
// carrier. Two things block a carrier, and are recorded as two kinds:
//   kWaitingForLock      the fiber waited for a lock whose waiting policy
//                        parks the OS thread (FiberLock<ParkCarrier>: the
//                        pre-JDK-24 monitor enter)
//   kBlockedWhileHolding the fiber did blocking I/O (VirtualThread::sleep_for)
//                        while it held such a lock, so it could not unmount
//                        (Thread.sleep inside `synchronized`)
// Only these instrumented park points are seen, exactly as the JVM sees only
// its own park points: a fiber that calls std::mutex::lock or ::read() blocks
// its carrier invisibly. Unlike JFR there is no duration threshold: every
// occurrence counts (the goal: "reports every pinned acquisition").
//
// What it costs
// -------------
// Nothing on any fast path. An event is recorded only after the carrier was
// already blocked (a futex sleep or a thread sleep, microseconds at least), and
// costs two clock reads, one relaxed fetch_add on a per-kind counter and, for
// the first `keep` events only, one slot write. Cheap enough to leave on.
//
// Memory orders
// -------------
// - counts_[kind]: relaxed. They are statistics that publish no data; a
//   reader that needs exact totals reads them after joining the fibers
//   (CarrierPool::join is a happens-before edge).
// - claimed_: relaxed fetch_add. It only hands out distinct slot indices
//   (RMW atomicity), it publishes nothing.
// - slot.ready: release store after the slot's fields are written, acquire
//   load before a reader copies them, so first_events() never returns a
//   half-written event.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

namespace locklab::fibers {

struct PinningEvent {
  enum class Kind : std::uint8_t {
    kWaitingForLock,       // waited for a carrier-parking lock: the carrier slept
    kBlockedWhileHolding,  // blocking I/O while holding one: the carrier slept
  };
  Kind kind = Kind::kWaitingForLock;
  std::uint64_t fiber_id = 0;              // VirtualThread::id(), 1-based
  const void* lock = nullptr;              // the lock's address
  const char* lock_name = "";              // the lock's name (static storage)
  int carrier = -1;                        // carrier index while blocked
  std::chrono::nanoseconds duration{0};    // how long the carrier was blocked
};

const char* to_string(PinningEvent::Kind kind) noexcept;

class PinningDetector {
 public:
  static constexpr std::size_t kMaxKept = 64;

  // Keeps the first `keep` events (at most kMaxKept) in full; counts all.
  explicit PinningDetector(std::size_t keep = 8) noexcept;
  PinningDetector(const PinningDetector&) = delete;
  PinningDetector& operator=(const PinningDetector&) = delete;

  // Records one occurrence. Thread-safe, never blocks, never allocates.
  // Does nothing while disabled.
  void record(const PinningEvent& event) noexcept;

  // Turns recording on (the default) or off. A relaxed flag: events already
  // in flight on other carriers may still land just after disabling.
  void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  // Events recorded so far, of one kind or of both. Exact once the fibers
  // that record have been joined; a lower bound while they run.
  std::uint64_t count(PinningEvent::Kind kind) const noexcept;
  std::uint64_t count() const noexcept;

  // Total time carriers spent blocked in recorded events.
  std::chrono::nanoseconds blocked_time() const noexcept;

  // Copies of the first min(count(), keep) events, in the order they
  // claimed their slot (not necessarily the order they ended).
  std::vector<PinningEvent> first_events() const;

  // A -Djdk.tracePinnedThreads=short-style text: totals, then one line per
  // kept event. For demos and failing tests.
  void report(std::ostream& out) const;

 private:
  struct Slot {
    PinningEvent event;
    std::atomic<bool> ready{false};
  };

  std::size_t keep_;
  std::atomic<bool> enabled_{true};
  std::array<std::atomic<std::uint64_t>, 2> counts_{};
  std::atomic<std::int64_t> blocked_ns_{0};
  std::atomic<std::uint64_t> claimed_{0};
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace locklab::fibers
