// counted_atomic.hpp — the atomic words of the exercises ttas_backoff and
// ticket: a std::atomic<T> that a check can watch, per thread, without timing
// anything: its read-modify-writes (exchange, the compare-exchanges) are
// counted, and a check may run code of its own right after a load.
//
// For the student: declare the words as the starter does (CountedAtomic<bool>,
// CountedAtomic<std::uint32_t>) and use them exactly like std::atomic. Keep
// that type: the checks that use it cannot see a plain std::atomic.
//
// What the checks use (test-only; nothing here changes what an operation does):
// - rmw_operations_of_this_thread(): the exchanges and compare-exchanges the
//   calling thread has made so far on any CountedAtomic (ttas_backoff: "how
//   many exchanges per acquisition under contention").
// - set_after_load_hook(f): from now on, every load() (and implicit read) by
//   the calling thread of any CountedAtomic calls f() after it has read the
//   value; nullptr removes it (ticket: another thread takes the lock between
//   a try_lock's look at the counters and what it does next).
//
// Cost per operation: one thread_local increment per RMW (no shared line, no
// contention of its own) and one thread_local test per load.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

namespace locklab::exercises {

namespace counted_atomic_detail {
inline thread_local std::uint64_t rmw_operations = 0;
inline thread_local std::function<void()> after_load;
}  // namespace counted_atomic_detail

// Calls `hook` after every load of a CountedAtomic by this thread (empty: none).
inline void set_after_load_hook(std::function<void()> hook) { counted_atomic_detail::after_load = std::move(hook); }

// The exchanges and compare-exchanges this thread has made on CountedAtomics.
inline std::uint64_t rmw_operations_of_this_thread() noexcept { return counted_atomic_detail::rmw_operations; }

template <class T>
class CountedAtomic : public std::atomic<T> {
  using Base = std::atomic<T>;

 public:
  using Base::Base;
  using Base::operator=;

  T load(std::memory_order order = std::memory_order_seq_cst) const noexcept {
    const T value = Base::load(order);
    if (counted_atomic_detail::after_load) counted_atomic_detail::after_load();
    return value;
  }
  operator T() const noexcept { return load(); }

  T exchange(T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
    ++counted_atomic_detail::rmw_operations;
    return Base::exchange(desired, order);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
    ++counted_atomic_detail::rmw_operations;
    return Base::compare_exchange_weak(expected, desired, order);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success, std::memory_order failure) noexcept {
    ++counted_atomic_detail::rmw_operations;
    return Base::compare_exchange_weak(expected, desired, success, failure);
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
    ++counted_atomic_detail::rmw_operations;
    return Base::compare_exchange_strong(expected, desired, order);
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success, std::memory_order failure) noexcept {
    ++counted_atomic_detail::rmw_operations;
    return Base::compare_exchange_strong(expected, desired, success, failure);
  }
};

}  // namespace locklab::exercises
