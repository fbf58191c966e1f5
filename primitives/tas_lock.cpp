#include "primitives/tas_lock.hpp"

#include <cstdint>

#include "primitives/cpu_relax.hpp"

namespace locklab {

void TasLock::lock_slow() noexcept {
  std::int64_t spins = 0;
  do {
    ++spins;
    cpu_relax();
  } while (locked_.exchange(true, std::memory_order_acquire));
  stats_.record_contended_acquire(spins);
}

}  // namespace locklab
