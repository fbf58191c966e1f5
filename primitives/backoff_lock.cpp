#include "primitives/backoff_lock.hpp"

#include "primitives/cpu_relax.hpp"

namespace locklab {
namespace {

// xorshift32: a few cycles, thread-local, good enough to de-synchronise
// waiters (it is jitter, not cryptography). Seeded from the thread's address
// so threads start on different sequences.
std::uint32_t next_random() noexcept {
  thread_local std::uint32_t x = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&x) >> 4) | 1u;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

}  // namespace

std::int64_t BackoffLock::acquire_contended(std::atomic<bool>& locked) noexcept {
  std::int64_t spins = 0;
  std::uint32_t limit = kMinBackoff;
  for (;;) {
    while (locked.load(std::memory_order_relaxed)) {
      ++spins;
      cpu_relax();
    }
    if (!locked.exchange(true, std::memory_order_acquire)) return spins;
    // Lost a race for a free lock: back off a random [limit/2, limit) pauses.
    const std::uint32_t pauses = limit / 2 + next_random() % (limit / 2);
    for (std::uint32_t i = 0; i < pauses; ++i) cpu_relax();
    spins += pauses;
    if (limit < kMaxBackoff) limit *= 2;
  }
}

}  // namespace locklab
