// parking_lot_mutex.cpp — the slow paths of ParkingLotMutex (see the header
// for the word's states and the argument).
#include "primitives/parking_lot_mutex.hpp"

#include <algorithm>

#include "primitives/cpu_relax.hpp"
#include "primitives/parking_lot.hpp"

namespace locklab {

namespace {
// At budget 0 a lock would never spin again, however short its sections
// became; one contended acquire in kProbeEvery spins kProbeSpins polls so
// that a budget that decayed can grow back (AdaptiveMutex's probes, same
// numbers).
constexpr std::uint32_t kProbeEvery = 16;
constexpr std::uint32_t kProbeSpins = 100;
// A timed spin reads the clock once per this many polls (~1.3 us at ~20 ns
// a poll): often enough to honour a deadline, rarely enough not to slow the
// spin.
constexpr std::uint32_t kPollsPerClockRead = 64;
}  // namespace

ParkingLotMutex::ParkingLotMutex(SpinPolicy policy) noexcept
    : spin_budget_(std::clamp(policy.initial_spins, policy.min_spins, std::max(policy.min_spins, policy.max_spins))),
      policy_(policy) {}

void ParkingLotMutex::lock_slow() noexcept { acquire_slow<false>({}); }

bool ParkingLotMutex::lock_slow_until(std::chrono::steady_clock::time_point deadline) noexcept {
  return acquire_slow<true>(deadline);
}

void ParkingLotMutex::adapt(bool won) noexcept {
  if (policy_.kind != SpinPolicy::Kind::kAdaptive) return;
  // Racy load + store: a lost update only leaves the budget a little stale.
  const std::uint32_t b = spin_budget_.load(std::memory_order_relaxed);
  const std::uint32_t shrink = b / 8 + 1;
  const std::uint32_t next = won ? b + b / 4 + 1 : (b > shrink ? b - shrink : 0);
  spin_budget_.store(std::clamp(next, policy_.min_spins, policy_.max_spins), std::memory_order_relaxed);
}

template <bool kTimed>
bool ParkingLotMutex::acquire_slow(std::chrono::steady_clock::time_point deadline) noexcept {
  using Kind = SpinPolicy::Kind;
  const bool spin_only = policy_.kind == Kind::kSpinOnly;
  std::int64_t spins = 0;     // polls in this acquisition, for the statistics
  std::uint32_t spun = 0;     // polls in the current spin phase
  bool spinning = false;      // the current spin phase has polled at least once
  bool woken = false;         // this thread is the awake successor: it owns kWoken
  std::uint32_t budget = 0;
  auto refill = [&] {
    spun = 0;
    if (policy_.kind == Kind::kParkOnly) {
      budget = 0;
    } else {
      budget = spin_budget_.load(std::memory_order_relaxed);
      // Relaxed: a heuristic counter, like the budget.
      if (budget == 0 && probes_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == 0) budget = kProbeSpins;
    }
  };
  refill();
  // Leaving without the lock as the woken successor must hand kWoken back,
  // or every later release would believe a successor is awake and wake
  // nobody; and a release that skipped its wake-up because of us may have
  // left the lock free with threads queued, so their wake-up is ours to do.
  auto give_up = [&] {
    if (woken) {
      const std::uint8_t w = word_.fetch_and(static_cast<std::uint8_t>(~kWoken), std::memory_order_relaxed);
      if ((w & (kHeld | kParked)) == kParked) wake_for_free_lock();
    }
    stats_.record_contended_acquire(spins);
    return false;
  };

  for (;;) {
    std::uint8_t w = word_.load(std::memory_order_relaxed);
    if (!(w & kHeld)) {
      const std::uint8_t next = static_cast<std::uint8_t>((w | kHeld) & ~(woken ? kWoken : 0));
      if (word_.compare_exchange_weak(w, next, std::memory_order_acquire, std::memory_order_relaxed)) {
        if (spinning) adapt(true);
        stats_.record_contended_acquire(spins);
        return true;
      }
      continue;
    }
    // Spin while nobody sleeps: a queued thread means the lock is busier
    // than a spin is likely to outlast, and the spinner would take a core.
    if (spin_only || (!(w & kParked) && spun < budget)) {
      ++spun;
      ++spins;
      spinning = true;
      if constexpr (kTimed) {
        if (spun % kPollsPerClockRead == 0 && std::chrono::steady_clock::now() >= deadline) return give_up();
      }
      cpu_relax();
      continue;
    }
    if (spinning) {
      adapt(false);
      spinning = false;
    }
    // Announce a sleeper (and, as the woken successor, stop being one) in
    // one CAS. Relaxed: park_if's validate re-reads the word under the
    // bucket lock, which orders it against the release's callback.
    if (!(w & kParked) || woken) {
      const std::uint8_t next = static_cast<std::uint8_t>((w | kParked) & ~(woken ? kWoken : 0));
      if (!word_.compare_exchange_weak(w, next, std::memory_order_relaxed, std::memory_order_relaxed)) continue;
      woken = false;
    }
    const ParkResult r = parking_lot::park_if(
        this,
        [this] {
          const std::uint8_t v = word_.load(std::memory_order_relaxed);
          return (v & (kHeld | kParked)) == (kHeld | kParked);
        },
        [] {}, kTimed ? std::optional<std::chrono::steady_clock::time_point>(deadline) : std::nullopt);
    switch (r.status) {
      case ParkStatus::kUnparked:
        stats_.record_park();
        if (r.token == kHandoffToken) {  // kHeld was never cleared: the lock is ours
          stats_.record_contended_acquire(spins);
          return true;
        }
        woken = true;
        refill();
        break;
      case ParkStatus::kTimedOut:
        stats_.record_park();
        return give_up();
      case ParkStatus::kInvalid:  // the word changed before we could queue: look again
        break;
    }
  }
}

// A woken successor gave up while the lock was free and threads were
// queued: wake the next one on its behalf. We do not hold the lock, so other
// threads may take it meanwhile; the callback therefore changes only the two
// bits it owns, with read-modify-writes, never the whole word. Clearing
// kParked races with no queuing thread (they validate under the bucket lock,
// after this callback) and at worst makes one of them validate again.
void ParkingLotMutex::wake_for_free_lock() noexcept {
  parking_lot::unpark_one(this, [this](UnparkResult r) -> std::intptr_t {
    if (r.did_unpark) {
      stats_.record_wake();
      word_.fetch_or(kWoken, std::memory_order_relaxed);
    }
    if (!r.may_have_more_threads) word_.fetch_and(static_cast<std::uint8_t>(~kParked), std::memory_order_relaxed);
    return 0;
  });
}

void ParkingLotMutex::unlock_slow() noexcept {
  for (;;) {
    std::uint8_t w = word_.load(std::memory_order_relaxed);
    assert((w & kHeld) && "ParkingLotMutex::unlock: lock not held");
    if (!(w & kParked) || (w & kWoken)) {
      // Nobody queued, or a successor is already awake: just release.
      if (word_.compare_exchange_weak(w, static_cast<std::uint8_t>(w & ~kHeld), std::memory_order_release,
                                      std::memory_order_relaxed)) {
        return;
      }
      continue;
    }
    break;
  }
  // Queued threads and nobody awake: wake the oldest. The callback runs under
  // the bucket lock, so no thread can queue between the lot's count and the
  // word written here (a waiter validates under the same lock). While we
  // hold kHeld only a waiter setting kParked can change the word, and it
  // re-validates, so a plain store is safe.
  parking_lot::unpark_one(this, [this](UnparkResult r) -> std::intptr_t {
    const std::uint8_t parked = r.may_have_more_threads ? kParked : 0;
    if (r.did_unpark) stats_.record_wake();
    if (r.did_unpark && r.time_to_be_fair) {
      // Hand-off: kHeld stays set, so nobody can barge; the token tells the
      // woken thread that it owns the lock. Relaxed: the lot's unpark
      // orders our critical section before the woken thread's return.
      word_.store(static_cast<std::uint8_t>(kHeld | parked), std::memory_order_relaxed);
      stats_.record_handoff();
      return kHandoffToken;
    }
    word_.store(static_cast<std::uint8_t>(parked | (r.did_unpark ? kWoken : 0)), std::memory_order_release);
    return 0;
  });
}

}  // namespace locklab
