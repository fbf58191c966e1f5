#include "primitives/futex_mutex.hpp"

#include <algorithm>
#include <thread>

#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab {

FutexMutex::FutexMutex(SpinPolicy policy) noexcept : policy_(policy) {
  if (policy_.kind == SpinPolicy::Kind::kAdaptive) {
    if (policy_.max_spins < policy_.min_spins) policy_.max_spins = policy_.min_spins;
    policy_.initial_spins = std::clamp(policy_.initial_spins, policy_.min_spins, policy_.max_spins);
  }
  spin_budget_.store(policy_.initial_spins, std::memory_order_relaxed);
}

std::uint32_t FutexMutex::max_spinners() noexcept {
  static const std::uint32_t n = [] {
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 1 ? static_cast<std::uint32_t>(hw - 1) : 1u;
  }();
  return n;
}

void FutexMutex::wake_one() noexcept {
  futex_wake_one(state_);
  stats_.record_wake();
}

// Whether a hand-off is due; if so, schedules the next one kFairHandoffInterval
// from now, whether or not this one finds a sleeper to take it (an attempt
// that finds none costs two system calls, so at most one per interval).
bool FutexMutex::claim_handoff_slot() noexcept {
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now < next_handoff_ns_.load(std::memory_order_relaxed)) return false;
  next_handoff_ns_.store(now + std::chrono::steady_clock::duration(kFairHandoffInterval).count(),
                         std::memory_order_relaxed);
  return true;
}

// unlock() found the word at 2: some thread may be parked. The lock is
// already free (unlock's exchange released it, so the fast path stays one
// exchange); wake one sleeper, and if a hand-off is due, first take the lock
// back for it (CAS 0 -> 3) so that no running thread can barge in between.
void FutexMutex::unlock_slow() noexcept {
  std::uint32_t expected = kUnlocked;
  if (claim_handoff_slot() &&
      state_.compare_exchange_strong(expected, kHandedOff, std::memory_order_relaxed, std::memory_order_relaxed)) {
    // Relaxed: see "Memory orders" in the header (the CAS continues the
    // release sequence of our unlock's exchange).
    if (futex_wake_one(state_) > 0) {
      stats_.record_wake();
      stats_.record_handoff();
      return;
    }
    // Nobody was asleep to take it. Take the hand-off back, unless a parker
    // claimed it meanwhile; then wake once more for a thread that went to
    // sleep after our futex_wake.
    std::uint32_t handed = kHandedOff;
    if (!state_.compare_exchange_strong(handed, kUnlocked, std::memory_order_release, std::memory_order_relaxed)) {
      return;
    }
  }
  wake_one();
}

namespace {
// Contended acquires this thread made on locks whose budget had decayed to 0.
// Per thread rather than per lock so that counting costs no shared cache line
// (the point of decaying to 0 is to stop touching shared lines); it only
// paces the probes.
constinit thread_local std::uint32_t probe_tick = 0;
}  // namespace

void FutexMutex::lock_slow() noexcept { acquire_slow<false>({}); }

bool FutexMutex::lock_slow_until(std::chrono::steady_clock::time_point deadline) noexcept {
  return acquire_slow<true>(deadline);
}

// Polls up to `budget` times (unbounded for spin-only), trying 0 -> 1 when
// the word reads 0. Returns whether it took the lock.
bool FutexMutex::spin(std::uint32_t budget, std::int64_t& spins, bool timed,
                         std::chrono::steady_clock::time_point deadline) noexcept {
  const bool forever = policy_.kind == SpinPolicy::Kind::kSpinOnly;
  std::uint32_t missed = 0;
  for (std::uint32_t i = 0; forever || i < budget; ++i) {
    std::uint32_t seen = state_.load(std::memory_order_relaxed);
    if (seen == kUnlocked) {
      // Grace poll: a releaser that loops back re-locks within a few ns,
      // and stealing the line from it costs a cross-core transfer. Try only
      // if the word is still free one pause later (see "Barging, and the
      // grace poll" in the header).
      cpu_relax();
      seen = state_.load(std::memory_order_relaxed);
      if (seen == kUnlocked &&
          state_.compare_exchange_weak(seen, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
        return true;
      }
      // A missed chance (see "Missed chances" in the header).
      if (!forever && ++missed >= kMaxMissedChances) return false;
    }
    ++spins;
    cpu_relax();
    // A clock read costs ~20 ns, about one poll: check it every 64 polls.
    if (timed && (i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
  }
  return false;
}

void FutexMutex::adapt(SpinOutcome outcome, std::uint32_t used) noexcept {
  if (policy_.kind != SpinPolicy::Kind::kAdaptive) return;
  const std::uint32_t b = spin_budget_.load(std::memory_order_relaxed);
  // Grow from the budget that was used (a successful probe restarts a
  // budget that had decayed to 0); shrink by at least 1 so it can reach 0;
  // halve on a short win (see "Short wins" in the header).
  std::uint32_t next = b;
  switch (outcome) {
    case SpinOutcome::kWon:
      next = std::min(policy_.max_spins, used + used / 4 + 1);
      break;
    case SpinOutcome::kShortWin:
      next = std::max(policy_.min_spins, b / 2);
      break;
    case SpinOutcome::kFailed:
      next = std::max(policy_.min_spins, b - std::min(b, b / 8 + 1));
      break;
  }
  if (next != b) spin_budget_.store(next, std::memory_order_relaxed);
}

template <bool kTimed>
bool FutexMutex::acquire_slow(std::chrono::steady_clock::time_point deadline) noexcept {
  std::int64_t spins = 0;
  // Phase 1: spin, if the policy spins, the budget is not 0 (or this is a
  // probe) and a spinner slot is free.
  if (policy_.kind != SpinPolicy::Kind::kParkOnly) {
    const bool unlimited = policy_.kind == SpinPolicy::Kind::kSpinOnly;
    std::uint32_t budget = spin_budget_.load(std::memory_order_relaxed);
    if (!unlimited && budget == 0 && (++probe_tick % kProbeEvery) == 0) budget = kProbeSpins;
    // A plain load filters most latecomers without an RMW; the fetch_add
    // decides (two threads may pass the load together).
    bool may_spin = unlimited;
    if (!unlimited && budget != 0 && spinners_.load(std::memory_order_relaxed) < max_spinners()) {
      may_spin = spinners_.fetch_add(1, std::memory_order_relaxed) < max_spinners();
      if (!may_spin) spinners_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (may_spin) {
      const bool got = spin(budget, spins, kTimed, deadline);
      if (!unlimited) spinners_.fetch_sub(1, std::memory_order_relaxed);
      // A win after only a few polls means the holder had barely started:
      // the critical sections are shorter than the hand-off the win just
      // caused, so it counts against spinning, harder than a failed spin:
      // it halves the budget (see "Short wins").
      adapt(!got                      ? SpinOutcome::kFailed
            : spins < kShortWinPolls  ? SpinOutcome::kShortWin
                                      : SpinOutcome::kWon,
            budget);
      if (got) {
        stats_.record_contended_acquire(spins);
        return true;
      }
      if (unlimited) {  // only a timed spin-only try ends here: timed out
        stats_.record_contended_acquire(spins);
        return false;
      }
    }
  }
  // Phase 2: park. From here on take the lock only in state 2 (see essay):
  // the exchange returns 0 (free) or 3 (handed off) when it took the lock.
  std::uint32_t c = state_.exchange(kLockedWithWaiters, std::memory_order_acquire);
  while (c != kUnlocked && c != kHandedOff) {
    FutexWaitResult r;
    if constexpr (kTimed) {
      r = futex_wait_until(state_, kLockedWithWaiters, deadline);
    } else {
      r = futex_wait(state_, kLockedWithWaiters);
    }
    if (r != FutexWaitResult::kValueChanged) stats_.record_park();
    c = state_.exchange(kLockedWithWaiters, std::memory_order_acquire);
    if constexpr (kTimed) {
      // Only after the exchange: a wake-up (or hand-off) we consumed must
      // not be lost, so a timed-out thread still takes a free or handed-off
      // lock, and if it gives up it leaves the word at 2 (the holder's
      // unlock will wake someone).
      if (c != kUnlocked && c != kHandedOff && std::chrono::steady_clock::now() >= deadline) {
        stats_.record_contended_acquire(spins);
        return false;
      }
    }
  }
  stats_.record_contended_acquire(spins);
  return true;
}

template bool FutexMutex::acquire_slow<false>(std::chrono::steady_clock::time_point) noexcept;
template bool FutexMutex::acquire_slow<true>(std::chrono::steady_clock::time_point) noexcept;

}  // namespace locklab
