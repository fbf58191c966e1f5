// guarded_lock.hpp — the three-stage defence of the ticket-sale semaphore
// herd (docs/case-studies.md#semaphore-herd-at-a-ticket-sale) around any
// distributed lock or the PermitSemaphore: shed load in the process before
// it reaches Redis.
//
// Why it exists
// -------------
// In the ticket-sale semaphore herd, a service put a Redisson
// RPermitExpirableSemaphore(1) in front of a slow resource and called it from
// 64 I/O threads with a 60 s wait. Three things went wrong, each fixed by one
// stage here:
//   1. every request sent trySetPermits(1) (a Lua script) to Redis;
//   2. on every release, every waiting thread of every process woke and ran
//      the acquire script; one won, the rest burned Redis CPU (the herd);
//   3. waiters piled up without bound until all 64 threads blocked.
// The fix, per key, in this order:
//
//   try_acquire(key, wait):
//     deadline = now + wait                       (one budget for all stages)
//     1. WaiterGate ticket (max_waiters)          full -> kFastFail at once,
//                                                 nothing sent, nothing waited
//     2. local Semaphore(local_permits)           waits in-process until the
//        (KeyedRegistry: one per key)             deadline; only local_permits
//                                                 threads of this process go on
//     3. initialise once per key per process      e.g. try_set_permits(n): sent
//        (a cache of initialised keys)            only by the first holder of
//                                                 stage 2 that finds the key
//                                                 missing from the cache
//     4. the distributed acquire until deadline   i.e. with wait - time spent
//                                                 in stage 2 (the original
//                                                 `remaining = wait - elapsed`)
//   release (Guard::release or ~Guard): the distributed release, then the
//   local permit, then the ticket: reverse order, on every path. If any
//   stage throws (the factory, initialisation, the distributed acquire), the
//   stages already passed are undone before the exception leaves
//   try_acquire; nothing leaks.
//
// What it guarantees
// ------------------
// - At most local_permits (default 1) threads of this process are inside
//   the distributed acquire or hold the distributed lock for one key at any
//   moment (the local semaphore is held across both). So per release Redis
//   sees at most one waiter per process, however many threads wait: the
//   herd is bounded by the number of processes, not threads.
// - At most max_waiters threads of this process are inside try_acquire or
//   hold a Guard for one key; the next one fails fast (kFastFail), without
//   waiting and without a round trip (WaiterGate's exact bound).
// - The budget: try_acquire returns no later than `wait` after its call,
//   plus what one distributed attempt may overrun (the lock's own last
//   attempt at the deadline, bounded by its Client's timeouts).
// - Initialisation runs at most once per key per process while the key stays
//   in the cache (the cache holds init_cache_capacity keys; when full it is
//   cleared, so a key may be initialised again later: the initialisation
//   must be idempotent, as try_set_permits is). It runs under the local
//   permit, so with local_permits == 1 two threads never initialise one key
//   at once. If it throws, the key is not cached and the next holder tries
//   again.
// - The cache remembers this process's initialisation, not Redis's state:
//   the Redis key may be lost while the key stays cached (FLUSHALL, a
//   restart without persistence, an eviction). So an adapter must not rely
//   on the initialisation alone: GuardTraits<PermitSemaphore> passes its
//   permits to every acquire, whose script re-creates a missing count
//   (PermitSemaphore::try_acquire_until's permits_if_missing); the cached
//   initialisation only spares the try_set_permits round trip.
// - Per-key state (gate, local semaphore, the distributed lock object the
//   factory made) lives in a KeyedRegistry: it exists while some thread uses
//   the key and is reclaimed after, so a stream of distinct keys costs
//   memory bounded by concurrency. The initialisation cache is the one
//   structure that outlives a key's use (bounded by its capacity).
//
// What it does NOT do: it adds no safety to the distributed lock. Mutual
// exclusion across processes is still the lock's (a lease can still run out
// under its holder: fencing.hpp). It only decides who may ask Redis, and when.
//
// Adapting a lock type: GuardTraits<L>
// ------------------------------------
// The guard talks to L only through a traits object (stored by value, so it
// may carry parameters):
//   using Hold = ...;                             what a successful acquire yields
//   std::optional<Hold> acquire(L&, deadline);    nullopt: not acquired in time
//   void release(L&, Hold&);                      may throw (LockLost ...)
//   void initialise(L&);                          once per key per process
// Two are provided: the primary template for any TimedLockable lock
// (SpinLock, PubSubLock, AdaptiveLock, FairLock, FencedSpinLock, RedLock):
// Hold is empty, acquire is try_lock_until, release unlock, no
// initialisation; and GuardTraits<PermitSemaphore>: Hold is the permit id,
// the traits carry `permits` (what initialise passes to try_set_permits) and
// `lease`. Thread-owned locks (all but PermitSemaphore) must be released by
// the thread that acquired: keep the Guard on that thread.
//
// Outcomes
// --------
// - kAcquired: the Guard holds all three stages; lock() / hold() give the
//   distributed lock (e.g. FencedSpinLock::token()) and its Hold.
// - kFastFail: the gate was full. Nothing else happened.
// - kTimedOut: the budget ran out in stage 2 (local_timeouts) or stage 4
//   (redis_timeouts). Everything taken was given back.
// - An exception from a stage (redis::Error, std::bad_alloc, whatever the
//   traits throw): propagated after undoing the stages passed.
// - Guard::release(): reverse-order release; if the distributed release
//   throws (LockLost, redis::Error), the local permit and the ticket are
//   still given back, then the exception propagates (swallowing LockLost is
//   a bug: the critical section was not protected). ~Guard releases too but
//   cannot throw: it counts the failure (release_failures) and drops it;
//   call release() when the answer matters.
// - Bad arguments: max_waiters < 1, local_permits < 1, init_cache_capacity
//   < 1 or a null factory -> std::invalid_argument at construction.
//
// What it costs
// -------------
// In the process, per acquisition: two registry look-ups' worth of work
// (one KeyedRegistry::acquire: a shard mutex and a hash look-up), one
// compare-exchange on the gate, one on the local semaphore, one mutex for
// the initialisation cache; a few hundred nanoseconds, against tens of
// microseconds for one Redis round trip. In Redis: one waiter per process
// per key, whatever the thread count (the herd scenario,
// benches/scenarios, measures the commands per acquisition).
//
// Counters (relaxed atomics: statistics, read while running): fast_fails,
// local_waits (acquisitions that found the local permit taken and had to
// wait), local_timeouts, redis_attempts (distributed acquires started: one
// per thread that passed stage 2), redis_timeouts, acquisitions,
// initialisations, release_failures, and max_redis_waiters (the most
// threads of this process ever inside the distributed acquire at once, over
// all keys: <= local_permits for a single key).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

#include "distributed/lock_support.hpp"
#include "distributed/permit_semaphore.hpp"
#include "primitives/keyed_registry.hpp"
#include "primitives/semaphore.hpp"
#include "primitives/waiter_gate.hpp"

namespace locklab::redis {

// Adapter for any TimedLockable distributed lock (see the essay).
template <class L>
struct GuardTraits {
  struct Hold {};
  std::optional<Hold> acquire(L& lock, detail::Clock::time_point deadline) {
    if (lock.try_lock_until(deadline)) return Hold{};
    return std::nullopt;
  }
  void release(L& lock, Hold&) { lock.unlock(); }
  void initialise(L&) {}
};

// PermitSemaphore: the permit id is the hold; initialisation is
// try_set_permits(permits), sent once per key per process; every acquire
// re-creates the count with `permits` if Redis lost it (see the essay).
template <>
struct GuardTraits<PermitSemaphore> {
  using Hold = std::string;
  std::int64_t permits = 1;
  std::chrono::milliseconds lease{10'000};

  std::optional<Hold> acquire(PermitSemaphore& s, detail::Clock::time_point deadline) {
    return s.try_acquire_until(deadline, lease, permits);
  }
  void release(PermitSemaphore& s, Hold& id) { s.release(id); }
  void initialise(PermitSemaphore& s) { (void)s.try_set_permits(permits); }
};

// Not DeadlineLockable: one object serves many keys, and try_acquire(key, wait) returns a Guard, not a hold.
template <class L, class Traits = GuardTraits<L>>
class GuardedLock {
 public:
  using Hold = typename Traits::Hold;
  // Builds the distributed lock object of a key (called once per key while
  // the key is in use; under a registry shard mutex, so it must not call
  // back into this GuardedLock).
  using Factory = std::function<std::unique_ptr<L>(const std::string& key)>;

  struct Options {
    std::int64_t max_waiters = 64;        // per key per process (stage 1)
    std::ptrdiff_t local_permits = 1;     // per key per process (stage 2)
    std::size_t init_cache_capacity = 65'536;
  };

  enum class Outcome { kAcquired, kFastFail, kTimedOut };

  struct Counters {
    std::uint64_t fast_fails = 0;
    std::uint64_t local_waits = 0;
    std::uint64_t local_timeouts = 0;
    std::uint64_t redis_attempts = 0;
    std::uint64_t redis_timeouts = 0;
    std::uint64_t acquisitions = 0;
    std::uint64_t initialisations = 0;
    std::uint64_t release_failures = 0;
    std::int64_t max_redis_waiters = 0;
  };

 private:
  struct KeyState {
    KeyState(const Factory& make, const std::string& key, const Options& o)
        : gate(o.max_waiters), local(o.local_permits), remote(make(key)) {
      if (!remote) throw std::invalid_argument("GuardedLock: the factory returned no lock for key '" + key + "'");
    }
    WaiterGate gate;
    Semaphore local;
    std::unique_ptr<L> remote;
  };

 public:
  // The result of try_acquire: holds the stages it passed until release().
  // Movable; releases on destruction (see the essay for errors).
  class Guard {
   public:
    Guard(Guard&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)),
          outcome_(o.outcome_),
          state_(std::move(o.state_)),
          ticket_(std::move(o.ticket_)),
          hold_(std::move(o.hold_)) {}
    Guard& operator=(Guard&&) = delete;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (owner_ == nullptr || !hold_) return;
      try {
        release();
      } catch (...) {
        owner_->release_failures_.fetch_add(1, std::memory_order_relaxed);
      }
    }

    Outcome outcome() const noexcept { return outcome_; }
    explicit operator bool() const noexcept { return outcome_ == Outcome::kAcquired && hold_.has_value(); }
    // Pre: *this (acquired, not yet released).
    L& lock() const { return *state_->remote; }
    Hold& hold() { return *hold_; }

    // Distributed release, then the local permit, then the ticket. The
    // local stages are given back even if the first throws; then it
    // rethrows. Idempotent: a second call (or one on a failed Guard) does
    // nothing.
    void release() {
      if (!hold_) return;
      Hold h = std::move(*hold_);
      hold_.reset();
      struct Local {  // reverse order, also on the exception path
        Guard& g;
        ~Local() {
          g.state_->local.release();
          g.ticket_.reset();
          g.state_.reset();
        }
      } local{*this};
      owner_->traits_.release(*state_->remote, h);
    }

   private:
    friend class GuardedLock;
    Guard(GuardedLock* owner, Outcome outcome) : owner_(owner), outcome_(outcome) {}
    GuardedLock* owner_;
    Outcome outcome_;
    std::shared_ptr<KeyState> state_;
    std::optional<WaiterGate::Ticket> ticket_;
    std::optional<Hold> hold_;
  };

  // std::invalid_argument for a null factory or options out of range.
  explicit GuardedLock(Factory make) : GuardedLock(std::move(make), Options{}, Traits{}) {}
  GuardedLock(Factory make, Options options, Traits traits = Traits{})
      : make_(std::move(make)), options_(options), traits_(std::move(traits)) {
    if (!make_) throw std::invalid_argument("GuardedLock: null factory");
    if (options_.max_waiters < 1) throw std::invalid_argument("GuardedLock: max_waiters must be >= 1");
    if (options_.local_permits < 1) throw std::invalid_argument("GuardedLock: local_permits must be >= 1");
    if (options_.init_cache_capacity < 1) throw std::invalid_argument("GuardedLock: init_cache_capacity must be >= 1");
  }
  // Pre: no Guard outstanding and no thread inside try_acquire.
  ~GuardedLock() = default;
  GuardedLock(const GuardedLock&) = delete;
  GuardedLock& operator=(const GuardedLock&) = delete;

  // The four stages of the essay with one budget `wait` (<= 0: no waiting
  // anywhere: the local permit must be free and the distributed lock gets
  // one attempt).
  template <class Rep, class Period>
  Guard try_acquire(const std::string& key, const std::chrono::duration<Rep, Period>& wait) {
    return acquire_until(key, detail::deadline_after(wait));
  }
  template <class C, class D>
  Guard try_acquire_until(const std::string& key, const std::chrono::time_point<C, D>& deadline) {
    return acquire_until(key, detail::to_steady(deadline));
  }

  Counters counters() const noexcept {
    Counters c;
    c.fast_fails = fast_fails_.load(std::memory_order_relaxed);
    c.local_waits = local_waits_.load(std::memory_order_relaxed);
    c.local_timeouts = local_timeouts_.load(std::memory_order_relaxed);
    c.redis_attempts = redis_attempts_.load(std::memory_order_relaxed);
    c.redis_timeouts = redis_timeouts_.load(std::memory_order_relaxed);
    c.acquisitions = acquisitions_.load(std::memory_order_relaxed);
    c.initialisations = initialisations_.load(std::memory_order_relaxed);
    c.release_failures = release_failures_.load(std::memory_order_relaxed);
    c.max_redis_waiters = max_redis_waiters_.load(std::memory_order_relaxed);
    return c;
  }
  // Threads of this process in stage 1..4 or holding, for `key` (0 if the
  // key is not in use). A snapshot.
  std::int64_t waiting(const std::string& key) const {
    auto s = keys_.find(key);
    return s ? s->gate.waiting() : 0;
  }
  // Keys with live per-key state (the registry's size).
  std::size_t live_keys() const { return keys_.size(); }
  std::size_t cached_initialisations() const {
    std::lock_guard g(init_mu_);
    return initialised_.size();
  }
  const Options& options() const noexcept { return options_; }
  Traits& traits() noexcept { return traits_; }

 private:
  Guard acquire_until(const std::string& key, detail::Clock::time_point deadline) {
    Guard g(this, Outcome::kFastFail);
    g.state_ = keys_.acquire(key, make_, key, options_);
    KeyState& s = *g.state_;
    // Stage 1.
    g.ticket_ = s.gate.try_enter();
    if (!g.ticket_) {
      fast_fails_.fetch_add(1, std::memory_order_relaxed);
      g.state_.reset();
      return g;
    }
    // Stage 2: the remaining budget is whatever this wait leaves.
    if (!s.local.try_acquire()) {
      local_waits_.fetch_add(1, std::memory_order_relaxed);
      if (!s.local.try_acquire_until(deadline)) {
        local_timeouts_.fetch_add(1, std::memory_order_relaxed);
        g.outcome_ = Outcome::kTimedOut;
        g.ticket_.reset();
        g.state_.reset();
        return g;
      }
    }
    // From here the local permit is ours: give it back on every way out
    // (explicitly, not from a local's destructor: `g` may be moved into the
    // return value before locals are destroyed).
    std::optional<Hold> hold;
    try {
      // Stage 3.
      initialise_once(key, *s.remote);
      // Stage 4, with what is left of the budget.
      redis_attempts_.fetch_add(1, std::memory_order_relaxed);
      InFlight in_flight(*this);
      hold = traits_.acquire(*s.remote, deadline);
    } catch (...) {
      give_back_local(g);
      throw;
    }
    if (!hold) {
      redis_timeouts_.fetch_add(1, std::memory_order_relaxed);
      g.outcome_ = Outcome::kTimedOut;
      give_back_local(g);
      return g;
    }
    g.hold_ = std::move(hold);
    g.outcome_ = Outcome::kAcquired;
    acquisitions_.fetch_add(1, std::memory_order_relaxed);
    return g;
  }

  // Counts the threads inside a distributed acquire (max_redis_waiters).
  struct InFlight {
    GuardedLock& o;
    explicit InFlight(GuardedLock& owner) : o(owner) {
      const std::int64_t now = o.redis_waiters_.fetch_add(1, std::memory_order_relaxed) + 1;
      std::int64_t seen = o.max_redis_waiters_.load(std::memory_order_relaxed);
      while (now > seen && !o.max_redis_waiters_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
      }
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    ~InFlight() { o.redis_waiters_.fetch_sub(1, std::memory_order_relaxed); }
  };

  // Stages 2 and 1 undone, in that order; then the key's state handle.
  static void give_back_local(Guard& g) noexcept {
    g.state_->local.release();
    g.ticket_.reset();
    g.state_.reset();
  }

  // Runs under the local permit. The cache is checked and filled under
  // init_mu_, but the initialisation itself runs outside it (it is a round
  // trip; other keys must not wait for it).
  void initialise_once(const std::string& key, L& remote) {
    {
      std::lock_guard lk(init_mu_);
      if (initialised_.count(key) != 0) return;
    }
    traits_.initialise(remote);  // may throw: then the key stays uncached
    initialisations_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lk(init_mu_);
    if (initialised_.size() >= options_.init_cache_capacity) initialised_.clear();
    initialised_.insert(key);
  }

  Factory make_;
  Options options_;
  Traits traits_;
  KeyedRegistry<KeyState> keys_;

  mutable std::mutex init_mu_;
  std::unordered_set<std::string> initialised_;  // guarded by init_mu_

  std::atomic<std::uint64_t> fast_fails_{0};
  std::atomic<std::uint64_t> local_waits_{0};
  std::atomic<std::uint64_t> local_timeouts_{0};
  std::atomic<std::uint64_t> redis_attempts_{0};
  std::atomic<std::uint64_t> redis_timeouts_{0};
  std::atomic<std::uint64_t> acquisitions_{0};
  std::atomic<std::uint64_t> initialisations_{0};
  std::atomic<std::uint64_t> release_failures_{0};
  std::atomic<std::int64_t> redis_waiters_{0};
  std::atomic<std::int64_t> max_redis_waiters_{0};
};

}  // namespace locklab::redis
