#include "primitives/mcs_lock.hpp"

#include <new>

#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab {
namespace detail {

McsNode* McsNodePool::take_from_heap() noexcept {
  // A thread holding more than kNodesPerThread McsLocks at once: rare, so a
  // plain allocation is fine. Allocation failure is fatal, as for any lock.
  auto* n = new McsNode;
  n->pool = this;
  n->on_heap = true;
  return n;
}

void McsNodePool::give_to_heap(McsNode* n) noexcept { delete n; }

}  // namespace detail

void McsLock::lock_slow(detail::McsNode* node, detail::McsNode* pred) noexcept {
  pred->next.store(node, std::memory_order_release);
  std::int64_t spins = 0;
  const bool parks = waiting_ == Waiting::kSpinThenPark;
  while (node->wait.load(std::memory_order_acquire) != detail::kMcsGranted) {
    if (parks && spins >= kSpinPolls) {
      // Announce the sleep (1 -> 2), then sleep while the word stays 2. The
      // CAS fails only if the hand-off came first (the word is 0): the loop
      // condition then ends the wait. Relaxed: the acquire load above is
      // what synchronises with the hand-off.
      std::uint32_t expected = detail::kMcsWaiting;
      if (node->wait.compare_exchange_strong(expected, detail::kMcsParked, std::memory_order_relaxed) ||
          expected == detail::kMcsParked) {
        if (futex_wait(node->wait, detail::kMcsParked) != FutexWaitResult::kValueChanged) stats_.record_park();
      }
      continue;
    }
    ++spins;
    cpu_relax();
  }
  stats_.record_contended_acquire(spins);
}

void McsLock::wake(detail::McsNode* succ) noexcept {
  futex_wake_one(succ->wait);
  stats_.record_wake();
}

detail::McsNode* McsLock::wait_for_successor(detail::McsNode* node) noexcept {
  // A successor swapped itself into tail_ but has not linked yet: that takes
  // it a few instructions unless it is preempted in between.
  detail::McsNode* succ;
  while ((succ = node->next.load(std::memory_order_acquire)) == nullptr) cpu_relax();
  return succ;
}

}  // namespace locklab
