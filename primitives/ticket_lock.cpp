#include "primitives/ticket_lock.hpp"

#include "primitives/cpu_relax.hpp"

namespace locklab {

void TicketLock::lock_slow(std::uint32_t ticket) noexcept {
  std::int64_t spins = 0;
  while (serving_.load(std::memory_order_acquire) != ticket) {
    ++spins;
    cpu_relax();
  }
  stats_.record_contended_acquire(spins);
}

}  // namespace locklab
