// spin_policy.hpp — how long a parking lock polls before it sleeps: an
// adaptive budget (the default), a fixed one, never (park at once), or
// always (never park). FutexMutex, AdaptiveMutex, ReentrantLock and
// Semaphore take one, so the locks bench can put the policies side by side
// on one algorithm.
#pragma once

#include <cstdint>

namespace locklab {

// How a lock waits. The numbers are polls of the lock word, each one load
// + `pause` (~20 ns on this lab's 2-core AMD EPYC VM: physical_limits'
// Pause point measures it).
struct SpinPolicy {
  enum class Kind : std::uint8_t { kAdaptive, kFixed, kSpinOnly, kParkOnly };

  // Bounds of the adaptive budget: 0..1000 polls = 0..~20 us, initial 200
  // (~4 us). The ceiling is about twice a futex park + wake round trip (the
  // classic 2-competitive rule); the floor is 0 because on a lock whose
  // holder cycles faster than a cross-core hand-off any spinning loses, and
  // the budget must be able to stop it (a probe now and then brings it
  // back). futex_mutex.hpp ("The adaptive spin budget") derives these from
  // the locks bench; the measurements are cited there.
  static constexpr std::uint32_t kDefaultMinSpins = 0;
  static constexpr std::uint32_t kDefaultInitialSpins = 200;
  static constexpr std::uint32_t kDefaultMaxSpins = 1000;
  // With newcomers_spin: how far past its budget an adaptive
  // QueuedSynchronizer lets a *lone* spinner go (the only thread spinning,
  // nobody queued): 2,500 polls, ~50 us, twice the p99 futex wake-to-run
  // latency of the reference VM (24 us, physical_limits' FutexWakeToRun).
  // With one spinner there is a core for it (the holder has the other), so
  // the spin costs the holder no CPU time (only its polls' traffic on the
  // line), while a park costs the holder a futex wake at its next release
  // and the spinner a wake-up latency. It is the two-thread case: the
  // holder's barging makes most spins lose, which shrinks the budget, which
  // would otherwise turn every release into a wake-up.
  static constexpr std::uint32_t kLoneSpinPolls = 2500;

  Kind kind = Kind::kAdaptive;
  std::uint32_t initial_spins = kDefaultInitialSpins;  // fixed(): the budget
  std::uint32_t min_spins = kDefaultMinSpins;
  std::uint32_t max_spins = kDefaultMaxSpins;
  // QueuedSynchronizer in unfair mode only (FutexMutex has no queue: all its
  // waiters spin; a fair synchronizer's newcomers always spin while nobody
  // is queued, queued_synchronizer.hpp says why).
  // Whether a thread that finds the lock taken and nobody queued spins
  // before it queues (true), or queues at once and leaves the spinning to
  // the one thread woken from the queue (false, the default, as AQS does:
  // only the thread at the head of its queue spins). Off by default because
  // a spinning newcomer on a 2-core machine turns "one thread runs, the
  // others sleep" into two threads trading the lock's cache line at every
  // acquisition: with empty sections on the 2-core Intel VM, AdaptiveMutex
  // ran 9.5 M acquires/s at 2 waiters and 12 at 4 with newcomers spinning,
  // 60 and 90 without (results/reference/intel-xeon-2core-2026-12-02/
  // parking/: AdaptiveMutex(newcomers-spin) against AdaptiveMutex). Where
  // the waiters work between acquisitions the spin pays instead (4.0
  // against 3.87 M/s at 4 waiters, 1.07 against 0.96 at 16, with 100 ns of
  // think time per waiter): a sleeping newcomer leaves a core idle.
  bool newcomers_spin = false;

  static constexpr SpinPolicy adaptive() noexcept { return {}; }
  static constexpr SpinPolicy fixed(std::uint32_t spins) noexcept {
    return {Kind::kFixed, spins, spins, spins};
  }
  static constexpr SpinPolicy spin_only() noexcept { return {Kind::kSpinOnly, 0, 0, 0}; }
  static constexpr SpinPolicy park_only() noexcept { return {Kind::kParkOnly, 0, 0, 0}; }
  // This policy with newcomers_spin set.
  constexpr SpinPolicy with_newcomers_spinning() const noexcept {
    SpinPolicy p = *this;
    p.newcomers_spin = true;
    return p;
  }
};

}  // namespace locklab
