#include "primitives/tas_lock.hpp"

#include <cstdint>

#include "primitives/cpu_relax.hpp"

namespace locklab {

std::int64_t TasLock::acquire_contended(std::atomic<bool>& locked) noexcept {
  std::int64_t spins = 0;
  do {
    ++spins;
    cpu_relax();
  } while (locked.exchange(true, std::memory_order_acquire));
  return spins;
}

}  // namespace locklab
