// thread_slot.hpp — a small, dense, per-thread integer: 0 for the first
// thread that asks, 1 for the next, and a slot freed by an exiting thread is
// handed to the next new thread (lowest free slot first).
//
// Why hand-written: std::thread::id is neither small nor dense, so it cannot
// index an array. StripedCounter uses the slot to give each thread a cell of
// its own; any per-thread table (statistics, queue nodes) can do the same.
//
// Guarantees: at any moment no two live threads hold the same slot; the
// number of slots in use equals the number of live threads that have asked.
// A slot changes hands only through the registry's mutex, so everything the
// exiting owner wrote happens-before everything the next owner does.
//
// Cost: the first call in a thread takes a mutex and registers a thread_local
// destructor; every later call is one load of a constinit thread_local (no
// TLS-initialisation guard on that path, which is why the value and the
// releaser live in separate variables).
#pragma once

#include <cstdint>

namespace locklab {

namespace detail {
// Slot + 1, or 0 before this thread's first call.
extern constinit thread_local std::uint32_t thread_slot_plus_one;
std::uint32_t acquire_thread_slot() noexcept;
}  // namespace detail

inline std::uint32_t this_thread_slot() noexcept {
  const std::uint32_t s = detail::thread_slot_plus_one;
  return s != 0 ? s - 1 : detail::acquire_thread_slot();
}

// Number of slots currently held by live threads. For tests.
std::uint32_t thread_slots_in_use() noexcept;

}  // namespace locklab
