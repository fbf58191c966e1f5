#include "fibers/carrier_pool.hpp"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/fiber/buffered_channel.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
#include <boost/fiber/operations.hpp>
#include <boost/fiber/protected_fixedsize_stack.hpp>

#include "fibers/virtual_thread.hpp"

namespace locklab::fibers {
namespace {

using Task = std::function<void()>;
constexpr std::size_t kChannelCapacity = 1024;  // a power of 2, as Boost requires

std::atomic<bool> g_work_stealing_used{false};

}  // namespace

struct CarrierPool::Impl {
  explicit Impl(const Options& o) : options(o), detector(o.keep_pinning_events), channel(kChannelCapacity) {}

  // Runs on a carrier: starts one fiber for `task` on this carrier.
  void launch(Task task) {
    auto body = [this, task = std::move(task)]() mutable { run(task); };
    if (options.stack == Stack::kProtected) {
      boost::fibers::fiber(std::allocator_arg, boost::fibers::protected_fixedsize_stack(options.stack_bytes),
                           std::move(body))
          .detach();
    } else {
      boost::fibers::fiber(std::allocator_arg, boost::fibers::fixedsize_stack(options.stack_bytes), std::move(body))
          .detach();
    }
  }

  // The body of every pool fiber.
  void run(Task& task) {
    {
      VirtualThread self(next_id.fetch_add(1, std::memory_order_relaxed), &detector);
      VirtualThread::Binding binding(self);
      try {
        task();
      } catch (...) {
        keep_error(std::current_exception());
      }
    }
    finish_one();
  }

  void keep_error(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(join_mutex);
    if (!first_error) first_error = std::move(e);
  }

  // acq_rel: release publishes this fiber's writes to the joiner; the
  // notifier takes the mutex so a joiner between its check and its wait
  // cannot miss the notification. The Impl outlives this call: the carriers
  // (on which fibers run) are joined before it is destroyed.
  void finish_one() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(join_mutex);
      join_cv.notify_all();
    }
  }

  void carrier_main(int index) {
    VirtualThread::set_carrier(index);
    current_pool = this;
    if (options.carriers == 1) {
      boost::fibers::use_scheduling_algorithm<boost::fibers::algo::round_robin>();  // trap 2
    } else {
      // Blocks until all carriers constructed theirs (a static barrier).
      boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(
          static_cast<std::uint32_t>(options.carriers), options.idle == Idle::kSuspend);
    }
    // This loop runs in the carrier's main fiber, which Boost never lets
    // migrate; popping suspends it while the carrier runs other fibers.
    // The timed pop is trap 4b's fix: its timer wakes a suspended carrier
    // every steal_tick, and a carrier that wakes with nothing of its own to
    // run tries to steal.
    Task task;
    for (;;) {
      const auto status = options.steal_tick.count() > 0 ? channel.pop_wait_for(task, options.steal_tick)
                                                         : channel.pop(task);
      if (status == boost::fibers::channel_op_status::closed) break;
      if (status != boost::fibers::channel_op_status::success) continue;  // timeout: just a tick
      try {
        launch(std::move(task));
      } catch (...) {  // e.g. the stack allocation failed
        keep_error(std::current_exception());
        finish_one();
      }
    }
    // The channel is closed: returning destroys this thread's scheduler,
    // which first runs its remaining fibers to completion.
  }

  Options options;
  PinningDetector detector;
  boost::fibers::buffered_channel<Task> channel;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::uint64_t> spawned{0};
  std::atomic<std::int64_t> pending{0};
  std::mutex join_mutex;
  std::condition_variable join_cv;
  std::exception_ptr first_error;

  static thread_local Impl* current_pool;
};

thread_local CarrierPool::Impl* CarrierPool::Impl::current_pool = nullptr;

CarrierPool::CarrierPool(Options options) {
  if (options.carriers < 1) throw std::invalid_argument("CarrierPool: carriers must be >= 1");
  if (options.stack_bytes < 16 * 1024) throw std::invalid_argument("CarrierPool: stack_bytes must be >= 16 KiB");
  if (options.carriers > 1 && g_work_stealing_used.exchange(true)) {
    throw std::logic_error(
        "CarrierPool: Boost 1.74's work_stealing keeps static state, so a process can create only one "
        "multi-carrier pool; run each configuration in its own process");
  }
  impl_ = std::make_unique<Impl>(options);
  impl_->threads.reserve(static_cast<std::size_t>(options.carriers));
  for (int i = 0; i < options.carriers; ++i) {
    impl_->threads.emplace_back([impl = impl_.get(), i] { impl->carrier_main(i); });
  }
}

CarrierPool::~CarrierPool() {
  try {
    join();
  } catch (...) {  // the owner did not join: a destructor must not throw
  }
  impl_->channel.close();
  for (auto& t : impl_->threads) t.join();
}

void CarrierPool::spawn(std::function<void()> fn) {
  Impl& impl = *impl_;
  impl.pending.fetch_add(1, std::memory_order_relaxed);
  impl.spawned.fetch_add(1, std::memory_order_relaxed);
  if (Impl::current_pool == &impl) {
    // Already on one of our carriers (read the thread_local and use it at
    // once: no suspension in between). Launch locally.
    try {
      impl.launch(std::move(fn));
    } catch (...) {
      impl.finish_one();
      throw;
    }
    return;
  }
  if (impl.channel.push(std::move(fn)) != boost::fibers::channel_op_status::success) {
    impl.finish_one();
    throw std::logic_error("CarrierPool::spawn: the pool is shutting down");
  }
}

void CarrierPool::join() {
  if (Impl::current_pool == impl_.get()) throw std::logic_error("CarrierPool::join called from one of its fibers");
  std::unique_lock<std::mutex> lock(impl_->join_mutex);
  impl_->join_cv.wait(lock, [this] { return impl_->pending.load(std::memory_order_acquire) == 0; });
  if (impl_->first_error) std::rethrow_exception(std::exchange(impl_->first_error, nullptr));
}

bool CarrierPool::join_for(std::chrono::milliseconds timeout) {
  if (Impl::current_pool == impl_.get()) throw std::logic_error("CarrierPool::join_for called from one of its fibers");
  std::unique_lock<std::mutex> lock(impl_->join_mutex);
  if (!impl_->join_cv.wait_for(lock, timeout,
                               [this] { return impl_->pending.load(std::memory_order_acquire) == 0; })) {
    return false;
  }
  if (impl_->first_error) std::rethrow_exception(std::exchange(impl_->first_error, nullptr));
  return true;
}

int CarrierPool::carriers() const noexcept { return impl_->options.carriers; }
bool CarrierPool::work_stealing() const noexcept { return impl_->options.carriers > 1; }
std::uint64_t CarrierPool::spawned() const noexcept { return impl_->spawned.load(std::memory_order_relaxed); }
PinningDetector& CarrierPool::detector() noexcept { return impl_->detector; }
bool CarrierPool::work_stealing_used() noexcept { return g_work_stealing_used.load(); }

}  // namespace locklab::fibers
