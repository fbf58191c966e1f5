#include "primitives/mcs_lock.hpp"

#include <new>

#include "primitives/cpu_relax.hpp"

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
  while (node->locked.load(std::memory_order_acquire)) {
    ++spins;
    cpu_relax();
  }
  stats_.record_contended_acquire(spins);
}

detail::McsNode* McsLock::wait_for_successor(detail::McsNode* node) noexcept {
  // A successor swapped itself into tail_ but has not linked yet: that takes
  // it a few instructions unless it is preempted in between.
  detail::McsNode* succ;
  while ((succ = node->next.load(std::memory_order_acquire)) == nullptr) cpu_relax();
  return succ;
}

}  // namespace locklab
