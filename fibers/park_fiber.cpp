#include "fibers/park_fiber.hpp"

#include <algorithm>
#include <mutex>

#include "primitives/queued_synchronizer_impl.hpp"

namespace locklab {
template class BasicQueuedSynchronizer<fibers::ParkFiber>;
}  // namespace locklab

namespace locklab::fibers {

ParkResult ParkFiber::park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                              std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::unique_lock<boost::fibers::mutex> lock(mutex_);
  if (!validate()) return {ParkStatus::kInvalid, 0};
  Waiter me(address);
  queue_.push_back(me);
  const auto unparked = [&] { return me.unparked; };
  if (!deadline) {
    me.wake.wait(lock, unparked);
  } else if (!me.wake.wait_until(lock, *deadline, unparked)) {
    queue_.erase(queue_.iterator_to(me));  // still queued: nobody dequeued us
    return {ParkStatus::kTimedOut, 0};
  }
  return {ParkStatus::kUnparked, me.token};
}

// The notify happens under the mutex: the woken waiter's record lives on its
// stack, and it may return (and free it) as soon as it can see `unparked`.
UnparkResult ParkFiber::unpark_one(const void* address,
                                   locklab::detail::FunctionRef<std::intptr_t(UnparkResult)> callback) {
  std::lock_guard<boost::fibers::mutex> lock(mutex_);
  const auto waits_here = [address](const Waiter& w) { return w.address == address; };
  UnparkResult r;
  Waiter* woken = nullptr;
  if (auto it = std::find_if(queue_.begin(), queue_.end(), waits_here); it != queue_.end()) {
    woken = &*it;
    queue_.erase(it);
    r.did_unpark = true;
    r.may_have_more_threads = std::any_of(queue_.begin(), queue_.end(), waits_here);
  }
  const std::intptr_t token = callback(r);
  if (woken != nullptr) {
    woken->token = token;
    woken->unparked = true;
    woken->wake.notify_one();
  }
  return r;
}

}  // namespace locklab::fibers
