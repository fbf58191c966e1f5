// Slow paths of StripedCounter: allocating a segment of cells, the overflow
// path, and the reads. See striped_counter.hpp.
#include "primitives/striped_counter.hpp"

namespace locklab {

StripedCounter::Cell* StripedCounter::allocate_segment(std::uint32_t index) noexcept {
  Cell* fresh = new Cell[kCellsPerSegment];
  Cell* expected = nullptr;
  if (segments_[index].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
    return fresh;
  }
  delete[] fresh;  // Another thread of this segment published first.
  return expected;
}

void StripedCounter::add_to_base(std::int64_t x) noexcept {
  base_.fetch_add(x, std::memory_order_relaxed);
}

std::int64_t StripedCounter::sum() const noexcept {
  std::int64_t total = base_.load(std::memory_order_relaxed);
  for (const auto& s : segments_) {
    const Cell* segment = s.load(std::memory_order_acquire);
    if (segment == nullptr) continue;
    for (std::uint32_t i = 0; i < kCellsPerSegment; ++i) total += segment[i].value.load(std::memory_order_relaxed);
  }
  return total;
}

std::uint32_t StripedCounter::cell_count() const noexcept {
  std::uint32_t n = 0;
  for (const auto& s : segments_) n += s.load(std::memory_order_acquire) != nullptr ? kCellsPerSegment : 0;
  return n;
}

StripedCounter::~StripedCounter() {
  for (auto& s : segments_) delete[] s.load(std::memory_order_relaxed);
}

}  // namespace locklab
