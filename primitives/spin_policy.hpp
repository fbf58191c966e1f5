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

  Kind kind = Kind::kAdaptive;
  std::uint32_t initial_spins = kDefaultInitialSpins;  // fixed(): the budget
  std::uint32_t min_spins = kDefaultMinSpins;
  std::uint32_t max_spins = kDefaultMaxSpins;

  static constexpr SpinPolicy adaptive() noexcept { return {}; }
  static constexpr SpinPolicy fixed(std::uint32_t spins) noexcept {
    return {Kind::kFixed, spins, spins, spins};
  }
  static constexpr SpinPolicy spin_only() noexcept { return {Kind::kSpinOnly, 0, 0, 0}; }
  static constexpr SpinPolicy park_only() noexcept { return {Kind::kParkOnly, 0, 0, 0}; }
};

}  // namespace locklab
