// Slow paths of CountDownLatch: parking and waking (the argument is in
// count_down_latch.hpp).
#include "primitives/count_down_latch.hpp"

#include <stdexcept>
#include <string>

#include "primitives/parking_lot.hpp"

namespace locklab {

CountDownLatch::CountDownLatch(std::int64_t count) : word_(0) {
  if (count < 0 || count > kMaxCount) {
    throw std::invalid_argument("CountDownLatch: count " + std::to_string(count) + " is outside 0.." +
                                std::to_string(kMaxCount));
  }
  word_.store(static_cast<std::uint64_t>(count) << kCountShift, std::memory_order_relaxed);
}

bool CountDownLatch::await_slow(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept {
  for (;;) {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    if ((w >> kCountShift) == 0) break;
    // Announce the sleeper; fails (and we look again) if the count moved.
    if ((w & kWaiters) == 0 &&
        !word_.compare_exchange_weak(w, w | kWaiters, std::memory_order_relaxed, std::memory_order_relaxed)) {
      continue;
    }
    const ParkResult r = parking_lot::park_if(
        this, [this] { return (word_.load(std::memory_order_relaxed) >> kCountShift) != 0; }, [] {}, deadline);
    if (r.status == ParkStatus::kTimedOut) return is_open();  // it may have opened right at the deadline
  }
  return is_open();  // the acquire load the happens-before rests on
}

void CountDownLatch::wake_all() noexcept { (void)parking_lot::unpark_all(this); }

}  // namespace locklab
