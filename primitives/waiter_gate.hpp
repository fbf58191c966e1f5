// waiter_gate.hpp — the `maxWaiters` fast-fail of the ticket-sale semaphore
// herd (docs/case-studies.md#semaphore-herd-at-a-ticket-sale): let at most N
// requests wait for a resource, and turn the (N+1)-th away at once instead
// of letting it queue.
//
// Why it exists
// -------------
// In the ticket-sale semaphore herd, every request for a hot key queued on a
// lock with a 60 s wait. Requests arrived faster than the lock could serve
// them, so the queue grew until all 64 I/O threads were blocked in it and the
// service stopped. Refusing early — "too many are already waiting, don't even
// queue" — turned that into a bounded queue plus fast failures (max
// concurrent waiters 64+ -> 1..6 in the case study's load tests). Put a
// WaiterGate in front of the wait, per key (a KeyedRegistry<WaiterGate>), and
// hold its ticket while waiting for and using the resource:
//
//     auto ticket = gate.try_enter();
//     if (!ticket) return Busy;                 // fail fast
//     if (!lock.try_lock_for(5s)) return Busy;  // at most max_waiters() here
//     ...                                       // ticket leaves at scope end
//
// What it guarantees (this implementation: exact)
// -----------------------------------------------
// Let `count` be the number of tickets outstanding.
// - count <= max_waiters() at every moment, and waiting() never reports more.
// - try_enter() fails only if count == max_waiters() at the instant of its
//   compare-exchange: it never turns anyone away while there is room.
// - Each granted ticket leaves exactly once (its destructor, or leave()).
// So under any race, N threads calling try_enter() on an empty gate with no
// ticket leaving get exactly min(N, max_waiters()) tickets. try_enter() is
// linearizable: it behaves as if it ran alone at its successful (or last
// failed) compare-exchange. It is lock-free, not wait-free: a try_enter can
// retry while others keep changing the count (each retry means another
// thread's enter or leave succeeded).
//
// The case study's version, and by how much it is approximate
// -----------------------------------------------------------
// The case study did
// `if (count.incrementAndGet() > max) { count.decrementAndGet(); fail }`:
// one fetch_add instead of a compare-exchange loop, which can never retry.
// Its authors wrote that "+1..2 may pass" under races. Worked out exactly,
// with R threads racing through the increment-check-decrement window at once:
// - It never admits too many: a thread is admitted only if the value its own
//   increment produced was <= max, and that value counts every admitted
//   ticket still outstanding, so admitted <= max always. (The "+1..2" fear
//   is unfounded for this ordering; it would be right for the other order,
//   `if (count.get() < max) count.incrementAndGet()`, which admits up to
//   R - 1 too many.)
// - It can turn threads away wrongly: a thread that is about to fail has
//   already incremented, so for an instant the count includes it; anyone
//   checking then sees one more than there are tickets. With max - 1
//   tickets out, a newcomer is refused although a slot is free if one
//   failing thread is mid-window. Worse, the windows can chain: each wrongly
//   refused thread's own increment can make the next newcomer fail too, so
//   while windows keep overlapping *every* newcomer can be refused with the
//   gate below its limit. The windows last nanoseconds, so in practice it
//   errs by one or two refusals at the limit, but there is no hard bound.
// - waiting() can read above max: up to max + R (the transient increments of
//   the R failing racers).
// For the case study's purpose both errors are harmless (the limit is a rough
// load-shedding threshold). The compare-exchange loop here costs the same
// one atomic RMW when uncontended, and gives the exact bound above, which a
// test can check and a student can rely on; so locklab uses it.
//
// What it costs
// -------------
// try_enter(): one load and one compare-exchange (more only under contention
// on the same gate); leaving: one fetch_sub. One cache line of memory. No
// waiting, ever: the gate never blocks (that is its whole point).
//
// Memory orders
// -------------
// All relaxed. The gate publishes no data; it only bounds a number, and the
// bound is a property of the single atomic's modification order (every RMW
// reads the latest value), which no ordering constraint strengthens. Whatever
// the ticket protects must be protected by something else (the lock behind
// the gate).
//
// What is invalid: a negative max_waiters (std::invalid_argument); a Ticket
// outliving its gate; destroying a gate with tickets outstanding.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>

#include "primitives/cache_line.hpp"

namespace locklab {

class WaiterGate {
 public:
  // Proof of having entered: movable, not copyable; leaves on destruction.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        leave();
        gate_ = std::exchange(other.gate_, nullptr);
      }
      return *this;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { leave(); }

    // Leaves now (idempotent). Post: this ticket holds nothing.
    void leave() noexcept {
      if (gate_ != nullptr) std::exchange(gate_, nullptr)->count_.fetch_sub(1, std::memory_order_relaxed);
    }
    // False once moved from or left.
    bool active() const noexcept { return gate_ != nullptr; }

   private:
    friend class WaiterGate;
    explicit Ticket(WaiterGate* gate) noexcept : gate_(gate) {}
    WaiterGate* gate_;
  };

  // Pre: max_waiters >= 0, else std::invalid_argument. 0 makes a closed
  // gate (every try_enter fails).
  explicit WaiterGate(std::int64_t max_waiters) : max_(max_waiters) {
    if (max_waiters < 0) throw std::invalid_argument("WaiterGate: max_waiters must be >= 0");
  }
  // Pre: no ticket outstanding.
  ~WaiterGate() { assert(waiting() == 0 && "WaiterGate destroyed with tickets outstanding"); }
  WaiterGate(const WaiterGate&) = delete;
  WaiterGate& operator=(const WaiterGate&) = delete;

  // A ticket if fewer than max_waiters() are outstanding, else nullopt at
  // once. Never blocks. Exact (see the essay).
  std::optional<Ticket> try_enter() noexcept {
    std::int64_t seen = count_.load(std::memory_order_relaxed);
    do {
      if (seen >= max_) return std::nullopt;
    } while (!count_.compare_exchange_weak(seen, seen + 1, std::memory_order_relaxed));
    return Ticket(this);
  }

  // Tickets outstanding now (a snapshot; never above max_waiters()).
  std::int64_t waiting() const noexcept { return count_.load(std::memory_order_relaxed); }
  std::int64_t max_waiters() const noexcept { return max_; }

 private:
  alignas(kCacheLineSize) std::atomic<std::int64_t> count_{0};
  const std::int64_t max_;
};

}  // namespace locklab
