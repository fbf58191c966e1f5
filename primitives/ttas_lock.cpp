#include "primitives/ttas_lock.hpp"

#include <cstdint>

#include "primitives/cpu_relax.hpp"

namespace locklab {

std::int64_t TtasLock::acquire_contended(std::atomic<bool>& locked) noexcept {
  std::int64_t spins = 0;
  for (;;) {
    while (locked.load(std::memory_order_relaxed)) {
      ++spins;
      cpu_relax();
    }
    if (!locked.exchange(true, std::memory_order_acquire)) return spins;
  }
}

}  // namespace locklab
