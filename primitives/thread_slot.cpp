#include "primitives/thread_slot.hpp"

#include <functional>
#include <mutex>
#include <queue>
#include <vector>

namespace locklab {
namespace detail {

constinit thread_local std::uint32_t thread_slot_plus_one = 0;

namespace {

class SlotRegistry {
 public:
  std::uint32_t acquire() {
    std::lock_guard guard(mutex_);
    ++in_use_;
    if (free_.empty()) return next_++;
    std::uint32_t slot = free_.top();
    free_.pop();
    return slot;
  }
  void release(std::uint32_t slot) {
    std::lock_guard guard(mutex_);
    --in_use_;
    free_.push(slot);
  }
  std::uint32_t in_use() {
    std::lock_guard guard(mutex_);
    return in_use_;
  }

 private:
  std::mutex mutex_;
  std::uint32_t next_ = 0;
  std::uint32_t in_use_ = 0;
  // Lowest free slot first keeps slots (and so counter cells) dense.
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> free_;
};

// Leaked on purpose: threads may exit (and release slots) during static
// destruction, after a function-local static would already be gone.
SlotRegistry& registry() {
  static SlotRegistry* r = new SlotRegistry;
  return *r;
}

// Returns the slot when its thread exits.
struct SlotReleaser {
  ~SlotReleaser() {
    if (thread_slot_plus_one != 0) registry().release(thread_slot_plus_one - 1);
    thread_slot_plus_one = 0;
  }
};

}  // namespace

std::uint32_t acquire_thread_slot() noexcept {
  thread_local SlotReleaser releaser;  // constructed on first use, destroyed at thread exit
  (void)releaser;
  const std::uint32_t slot = registry().acquire();
  thread_slot_plus_one = slot + 1;
  return slot;
}

}  // namespace detail

std::uint32_t thread_slots_in_use() noexcept { return detail::registry().in_use(); }

}  // namespace locklab
