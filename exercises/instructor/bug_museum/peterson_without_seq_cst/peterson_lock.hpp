// peterson_lock.hpp — THE FIX of the exhibit peterson_without_seq_cst
// (instructor folder; the exhibit is
// exercises/bug_museum/peterson_without_seq_cst/peterson_lock.hpp).
//
// What was wrong: Peterson's proof assumes that each thread's store of
// "I am interested" is visible to the other thread before that thread's
// load of "is the other interested?" — a store followed by a load of a
// DIFFERENT location, in that order. Release/acquire do not promise it:
// release orders what comes BEFORE the store, acquire what comes AFTER the
// load; nothing keeps a later load from passing an earlier store
// (StoreLoad). x86 does exactly that: every core parks its stores in a
// store buffer and lets its own later loads go ahead to the cache. Both
// threads write `true` into their buffers, both read the other's flag from
// memory, both read `false`, both enter. x86 (TSO) reorders nothing else,
// which is why the lab's other locks are fine with acquire/release: they
// decide with ONE read-modify-write (exchange, fetch_add, CAS), which on
// x86 is a locked instruction that drains the store buffer.
//
// The fix: make the store and the later load sequentially consistent: all
// seq_cst operations are in one total order that every thread agrees on,
// which is the assumption of the proof. On x86 a seq_cst store compiles to
// `xchg` (or `mov` + `mfence`): the store buffer is drained before the load.
// The equivalent minimal fix keeps the release stores and acquire loads and
// puts std::atomic_thread_fence(std::memory_order_seq_cst) between the last
// store and the first load of lock(). (All operations seq_cst, as here, is
// the version whose proof is the textbook's.) The cost: one full fence per
// lock(), tens of cycles uncontended; which is one reason real locks decide
// with one atomic read-modify-write instead of Peterson's loads and stores.
// Further reading: Mara Bos, "Rust Atomics and Locks", chapter 3 (memory
// ordering; why SeqCst exists, with this very pattern), and Jeff Preshing,
// "Memory Reordering Caught in the Act" (the store buffer caught on x86).
#pragma once

#include <atomic>

#include "primitives/cache_line.hpp"

namespace locklab::museum::fixed {

class PetersonLock {
 public:
  void lock(int me) noexcept {
    const int other = 1 - me;
    interested_[me].flag.store(true, std::memory_order_seq_cst);
    turn_.store(other, std::memory_order_seq_cst);  // seq_cst store: on x86 `xchg`, which drains the store buffer
    while (interested_[other].flag.load(std::memory_order_seq_cst) && turn_.load(std::memory_order_seq_cst) == other) {
    }
  }

  void unlock(int me) noexcept { interested_[me].flag.store(false, std::memory_order_release); }

 private:
  struct alignas(kCacheLineSize) Flag {
    std::atomic<bool> flag{false};
  };
  Flag interested_[2];
  alignas(kCacheLineSize) std::atomic<int> turn_{0};
};

}  // namespace locklab::museum::fixed
