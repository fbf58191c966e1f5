#include "primitives/adaptive_mutex.hpp"

#include <algorithm>
#include <thread>

#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab {

AdaptiveMutex::AdaptiveMutex(SpinPolicy policy) noexcept : policy_(policy) {
  if (policy_.kind == SpinPolicy::Kind::kAdaptive) {
    if (policy_.max_spins < policy_.min_spins) policy_.max_spins = policy_.min_spins;
    policy_.initial_spins = std::clamp(policy_.initial_spins, policy_.min_spins, policy_.max_spins);
  }
  spin_budget_.store(policy_.initial_spins, std::memory_order_relaxed);
}

std::uint32_t AdaptiveMutex::max_spinners() noexcept {
  static const std::uint32_t n = [] {
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 1 ? static_cast<std::uint32_t>(hw - 1) : 1u;
  }();
  return n;
}

void AdaptiveMutex::wake_one() noexcept {
  futex_wake_one(state_);
  stats_.record_wake();
}

bool AdaptiveMutex::time_for_handoff() noexcept {
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now < next_handoff_ns_.load(std::memory_order_relaxed)) return false;
  next_handoff_ns_.store(now + std::chrono::steady_clock::duration(kFairHandoffInterval).count(),
                         std::memory_order_relaxed);
  return true;
}

// The word is 2 (some thread may be parked): the only state besides 1 that
// the holder can see, since parkers change 1 -> 2 and nothing else while
// the lock is held.
void AdaptiveMutex::unlock_slow() noexcept {
  if (time_for_handoff()) {
    state_.store(kHandedOff, std::memory_order_release);
    if (futex_wake_one(state_) > 0) {
      stats_.record_wake();
      stats_.record_handoff();
      return;
    }
    // Nobody was asleep to take it. Take the hand-off back, unless a parker
    // returning from its wait claimed it meanwhile; then wake once more for
    // a thread that went to sleep on 3 after our futex_wake.
    std::uint32_t handed = kHandedOff;
    if (state_.compare_exchange_strong(handed, kUnlocked, std::memory_order_release, std::memory_order_relaxed)) {
      wake_one();
    }
    return;
  }
  const std::uint32_t prev = state_.exchange(kUnlocked, std::memory_order_release);
  assert(prev == kLockedWithWaiters && "AdaptiveMutex::unlock: lock not held");
  (void)prev;
  wake_one();
}

namespace {
// Contended acquires this thread made on locks whose budget had decayed to 0.
// Per thread rather than per lock so that counting costs no shared cache line
// (the point of decaying to 0 is to stop touching shared lines); it only
// paces the probes.
constinit thread_local std::uint32_t probe_tick = 0;
}  // namespace

void AdaptiveMutex::lock_slow() noexcept { acquire_slow<false>({}); }

bool AdaptiveMutex::lock_slow_until(std::chrono::steady_clock::time_point deadline) noexcept {
  return acquire_slow<true>(deadline);
}

// Polls up to `budget` times (unbounded for spin-only), trying 0 -> 1 when
// the word reads 0. Returns whether it took the lock.
bool AdaptiveMutex::spin(std::uint32_t budget, std::int64_t& spins, bool timed,
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

void AdaptiveMutex::adapt(bool spin_succeeded, std::uint32_t used) noexcept {
  if (policy_.kind != SpinPolicy::Kind::kAdaptive) return;
  const std::uint32_t b = spin_budget_.load(std::memory_order_relaxed);
  // Grow from the budget that was used (a successful probe restarts a
  // budget that had decayed to 0); shrink by at least 1 so it can reach 0.
  const std::uint32_t next = spin_succeeded ? std::min(policy_.max_spins, used + used / 8 + 1)
                                            : std::max(policy_.min_spins, b - std::min(b, b / 4 + 1));
  if (next != b) spin_budget_.store(next, std::memory_order_relaxed);
}

template <bool kTimed>
bool AdaptiveMutex::acquire_slow(std::chrono::steady_clock::time_point deadline) noexcept {
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
      // caused, so it counts against spinning (see "Short wins").
      adapt(got && spins >= kShortWinPolls, budget);
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
  // Phase 2: park. From here on take the lock only in state 2 (see essay).
  bool slept = false;  // only a thread back from futex_wait may claim a hand-off
  std::uint32_t c = state_.load(std::memory_order_relaxed);
  for (;;) {
    if (c == kUnlocked || (c == kHandedOff && slept)) {
      if (state_.compare_exchange_weak(c, kLockedWithWaiters, std::memory_order_acquire, std::memory_order_relaxed)) {
        break;
      }
      continue;  // c was reloaded by the failed CAS
    }
    if (c == kLocked &&
        !state_.compare_exchange_weak(c, kLockedWithWaiters, std::memory_order_relaxed, std::memory_order_relaxed)) {
      continue;
    }
    if (c == kLocked) c = kLockedWithWaiters;
    if constexpr (kTimed) {
      // Checked only here, with the lock seen taken: a thread that consumed
      // a wake-up still takes a free or handed-off lock past its deadline,
      // and one that gives up leaves the word at 2 or 3 (the holder's
      // release, or the hand-off's fallback, wakes someone else).
      if (std::chrono::steady_clock::now() >= deadline) {
        stats_.record_contended_acquire(spins);
        return false;
      }
    }
    FutexWaitResult r;
    if constexpr (kTimed) {
      r = futex_wait_until(state_, c, deadline);
    } else {
      r = futex_wait(state_, c);
    }
    if (r != FutexWaitResult::kValueChanged) stats_.record_park();
    slept = true;
    c = state_.load(std::memory_order_relaxed);
  }
  stats_.record_contended_acquire(spins);
  return true;
}

template bool AdaptiveMutex::acquire_slow<false>(std::chrono::steady_clock::time_point) noexcept;
template bool AdaptiveMutex::acquire_slow<true>(std::chrono::steady_clock::time_point) noexcept;

}  // namespace locklab
