#include "primitives/ttas_lock.hpp"

#include <cstdint>

#include "primitives/cpu_relax.hpp"

namespace locklab {

void TtasLock::lock_slow() noexcept {
  std::int64_t spins = 0;
  for (;;) {
    while (locked_.load(std::memory_order_relaxed)) {
      ++spins;
      cpu_relax();
    }
    if (!locked_.exchange(true, std::memory_order_acquire)) break;
  }
  stats_.record_contended_acquire(spins);
}

}  // namespace locklab
