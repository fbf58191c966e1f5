#include "fibers/pinning_detector.hpp"

#include <algorithm>
#include <ostream>

namespace locklab::fibers {

const char* to_string(PinningEvent::Kind kind) noexcept {
  switch (kind) {
    case PinningEvent::Kind::kWaitingForLock:
      return "waiting-for-lock";
    case PinningEvent::Kind::kBlockedWhileHolding:
      return "blocked-while-holding";
  }
  return "unknown";
}

PinningDetector::PinningDetector(std::size_t keep) noexcept
    : keep_(std::min(keep, kMaxKept)), slots_(new Slot[std::min(keep, kMaxKept)]) {}

void PinningDetector::record(const PinningEvent& event) noexcept {
  if (!enabled()) return;
  counts_[static_cast<std::size_t>(event.kind)].fetch_add(1, std::memory_order_relaxed);
  blocked_ns_.fetch_add(event.duration.count(), std::memory_order_relaxed);
  // Cheap test first: once the slots are full, skip the shared fetch_add.
  if (claimed_.load(std::memory_order_relaxed) >= keep_) return;
  const std::uint64_t index = claimed_.fetch_add(1, std::memory_order_relaxed);
  if (index >= keep_) return;
  Slot& slot = slots_[index];
  slot.event = event;
  slot.ready.store(true, std::memory_order_release);
}

std::uint64_t PinningDetector::count(PinningEvent::Kind kind) const noexcept {
  return counts_[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
}

std::uint64_t PinningDetector::count() const noexcept {
  return count(PinningEvent::Kind::kWaitingForLock) + count(PinningEvent::Kind::kBlockedWhileHolding);
}

std::chrono::nanoseconds PinningDetector::blocked_time() const noexcept {
  return std::chrono::nanoseconds(blocked_ns_.load(std::memory_order_relaxed));
}

std::vector<PinningEvent> PinningDetector::first_events() const {
  std::vector<PinningEvent> out;
  for (std::size_t i = 0; i < keep_; ++i) {
    if (slots_[i].ready.load(std::memory_order_acquire)) out.push_back(slots_[i].event);
  }
  return out;
}

void PinningDetector::report(std::ostream& out) const {
  out << "pinning: " << count() << " events (" << count(PinningEvent::Kind::kWaitingForLock)
      << " waiting-for-lock, " << count(PinningEvent::Kind::kBlockedWhileHolding)
      << " blocked-while-holding), carriers blocked "
      << std::chrono::duration<double, std::milli>(blocked_time()).count() << " ms in total\n";
  for (const PinningEvent& e : first_events()) {
    out << "  fiber #" << e.fiber_id << " pinned carrier " << e.carrier << " for "
        << std::chrono::duration<double, std::milli>(e.duration).count() << " ms: " << to_string(e.kind)
        << " " << e.lock_name << "@" << e.lock << "\n";
  }
}

}  // namespace locklab::fibers
