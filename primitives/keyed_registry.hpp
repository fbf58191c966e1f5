// keyed_registry.hpp — one shared instance per key, created on first use and
// reclaimed when the last user lets go: the ticket-sale semaphore herd's
// `ConcurrentHashMap.computeIfAbsent(key) { Semaphore(1) }`, without its
// memory leak (docs/case-studies.md#semaphore-herd-at-a-ticket-sale).
//
// Why it exists
// -------------
// The service of that case study kept a per-key Semaphore (and a per-key
// waiter counter) in a ConcurrentHashMap so that all requests for one lock
// key in a process share one local gate. computeIfAbsent (not putIfAbsent)
// mattered there: the factory runs only for the first caller, so exactly one
// instance per key exists and no throw-away instances are built under races.
// But nothing ever removed an entry: a service that locks on "order:<id>"
// adds one semaphore per order it ever saw, forever. KeyedRegistry keeps the
// one-instance-per-key guarantee and removes an entry as soon as no handle to
// it is left.
//
//     KeyedRegistry<Semaphore> local_locks;
//     std::shared_ptr<Semaphore> s = local_locks.acquire(key, 1);  // Semaphore(1)
//     if (s->try_acquire_for(wait)) { ...; s->release(); }
//     // s goes out of scope: if it was the last handle, the entry is gone
//
// What it guarantees
// ------------------
// - One instance per key at a time: while any handle for key k is alive,
//   every acquire(k, ...) returns a handle to that same instance. Under racing
//   creators exactly one constructs it, from its own `args`; the others wait
//   (briefly, on the shard's mutex) and get the same instance; their args
//   are not used.
// - Reclamation: when the last handle for k is destroyed, the instance is
//   destroyed and its map entry erased, before that handle's destructor
//   returns. So size() == number of keys with a live handle, once no acquire
//   or release is in flight, and a stream of distinct keys, each dropped
//   after use, keeps size() at the number in use at once: memory is bounded
//   by concurrency, not by history.
// - At most one T per key exists at any moment, counting one still being
//   destroyed: an acquire(k) that races the drop of k's last handle waits
//   (yielding) until the old instance is destroyed and its slot erased, then
//   constructs the new one. So everything any thread did to the old instance
//   happens-before the new one's construction; a per-key lock stays a lock
//   across reclamation (a critical section under the new semaphore sees the
//   writes made under the old one). Without this wait a creator would see
//   only a relaxed "expired" reading of the old reference count, which orders
//   nothing; ThreadSanitizer flags the resulting race on the guarded data.
// - A key whose entry was reclaimed starts fresh: the next acquire(k, args)
//   constructs a new instance from its args. State kept in T (a permit count,
//   a waiter count) therefore lives only while someone holds a handle; that
//   is right for locks, semaphores and waiter gates (an unused one is in its
//   initial state anyway, provided users restore it: release what they took).
// - Handles are std::shared_ptr<T>: copy them freely, from any thread. The
//   registry must outlive every handle (a handle's last release touches its
//   shard).
//
// How it works
// ------------
// kShardCount = 64 shards, each a std::mutex and an
// std::unordered_map<Key, std::weak_ptr<Entry>>; a key's shard is chosen by
// Fibonacci-hashing the key's hash (multiply by 2^64/phi, keep the top 6
// bits), so a weak std::hash (identity for integers) still spreads keys.
// An Entry holds the T (in a std::optional), the key and its shard; handles
// are aliasing shared_ptrs to the T inside it, and the map holds only a
// weak_ptr, so the map alone never keeps an entry alive. acquire() locks the
// key's shard and looks the key up:
//   absent          build a new Entry with make_shared (one allocation for
//                   T, key and reference counts), store its weak_ptr, return;
//   live            return weak.lock();
//   expired         the last handle is being dropped on another thread:
//                   unlock, yield, look again.
// When the last handle dies, ~Entry (on that thread) destroys the T, then
// locks the shard and erases the slot. Nobody waits for anything while
// holding a shard mutex (T's constructor aside), so the yield loop ends as
// soon as the dropping thread has destroyed T and taken the mutex once.
//
// Why 64 shards: unrelated keys contend only when they hash to the same
// shard. With T threads each touching a random key, the chance that a given
// acquire shares its shard with one of the other T - 1 threads is about
// (T - 1)/64: under 2% for this lab's 2 cores, ~10% for 8 threads. A shard
// costs one 128-byte cache line (padded, so two shards' mutexes never share
// a line), so 64 shards are 8 KiB per registry: cheap for the handful of
// registries a process has, and more shards would buy little once the
// critical section (a hash lookup) is this short. (ConcurrentHashMap locks
// per bin, which is finer still.)
//
// What it costs
// -------------
// acquire(): two std::hash calls (shard choice, then the map), one mutex
// lock/unlock (uncontended: two atomic RMWs), one hash-map lookup, one
// compare-exchange on the shared count; on a miss also one allocation and
// T's constructor, under the shard mutex. An acquire that races the drop of
// the same key's last handle yields until that drop has finished.
// Dropping a handle: one atomic decrement; the last one also locks the shard
// and erases. Per live key: one node of the shard's map (key + weak_ptr)
// plus one allocation holding T, the key and the reference counts.
//
// Memory orders: all synchronisation is the shard mutex's and
// std::shared_ptr's. The last handle's decrement is acq_rel, so ~Entry runs
// after every other handle's last use; ~Entry then unlocks the shard mutex,
// and the next creator of the key locks it: that chain is the
// happens-before promised above. weak_ptr::lock() on a live entry is a
// compare-exchange that orders nothing for T's users (T synchronises itself).
//
// What is invalid: T's constructor calling back into the same registry (it
// runs under the shard mutex: self-deadlock; T's destructor runs unlocked);
// a handle outliving the registry.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "primitives/cache_line.hpp"

namespace locklab {

template <class T, class Key = std::string, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>>
class KeyedRegistry {
 public:
  static constexpr std::size_t kShardCount = 64;  // a power of two; see the essay
  using Handle = std::shared_ptr<T>;

  KeyedRegistry() = default;
  // Pre: no handle outstanding.
  ~KeyedRegistry() { assert(size() == 0 && "KeyedRegistry destroyed while handles are alive"); }
  KeyedRegistry(const KeyedRegistry&) = delete;
  KeyedRegistry& operator=(const KeyedRegistry&) = delete;

  // The instance for `key`, constructing it as T(std::forward<Args>(args)...)
  // if no live one exists. Post: the returned handle is non-null and every
  // acquire(key) until it and its copies are gone returns the same instance.
  // Throws what T's constructor or the allocation throws (then nothing is
  // inserted).
  template <class... Args>
  Handle acquire(const Key& key, Args&&... args) {
    Shard& shard = shard_for(key);
    for (;;) {
      {
        std::lock_guard guard(shard.mutex);
        auto it = shard.map.find(key);
        if (it == shard.map.end()) return create_locked(shard, key, std::forward<Args>(args)...);
        if (std::shared_ptr<Entry> live = it->second.lock()) return Handle(live, &*live->value);
      }
      // The key's last handle is being dropped right now: its ~Entry is
      // destroying the old instance and will then erase the slot. Wait for
      // that (it needs this mutex), so the old instance is gone, and all its
      // users' writes are visible, before a new one is constructed.
      std::this_thread::yield();
    }
  }

  // The live instance for `key`, or nullptr; never constructs.
  Handle find(const Key& key) const {
    const Shard& shard = shard_for(key);
    std::lock_guard guard(shard.mutex);
    const auto it = shard.map.find(key);
    if (it == shard.map.end()) return nullptr;
    std::shared_ptr<Entry> live = it->second.lock();
    return live ? Handle(live, &*live->value) : nullptr;
  }

  // Keys with an entry (a snapshot: shards are counted one after another).
  // Exact when no acquire or handle release runs concurrently.
  std::size_t size() const {
    std::size_t n = 0;
    for (const Shard& shard : shards_) {
      std::lock_guard guard(shard.mutex);
      n += shard.map.size();
    }
    return n;
  }

 private:
  struct Entry;

  struct alignas(kCacheLineSize) Shard {
    mutable std::mutex mutex;
    std::unordered_map<Key, std::weak_ptr<Entry>, Hash, KeyEqual> map;  // guarded by mutex
  };

  struct Entry {
    template <class... Args>
    Entry(Shard& s, const Key& k, Args&&... args)
        : shard(s), key(k), value(std::in_place, std::forward<Args>(args)...) {}
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    // Runs in the thread that releases the last handle, after its reference
    // count decrement (acq_rel: it has seen every other handle's last use).
    // Destroys T first, unlocked, then erases the slot under the mutex; the
    // next creator of this key waits for that erase (see acquire), so it
    // happens-after everything done to this instance. (The control block
    // keeps its own weak reference while this runs, so erasing the map's
    // weak_ptr here does not free the block under our feet.)
    ~Entry() {
      value.reset();
      std::lock_guard guard(shard.mutex);
      const auto it = shard.map.find(key);
      // Creators wait while this key's slot is expired, so the slot is ours.
      assert(it != shard.map.end() && it->second.expired());
      if (it != shard.map.end() && it->second.expired()) shard.map.erase(it);
    }

    Shard& shard;
    const Key key;
    std::optional<T> value;  // engaged from construction until ~Entry
  };

  // Shard mutex held, key absent: build the instance and publish its slot.
  template <class... Args>
  Handle create_locked(Shard& shard, const Key& key, Args&&... args) {
    // Insert the slot first: if that throws, nothing was built. If building
    // throws, remove the slot again. (Never let a fresh Entry die in here:
    // its destructor locks the mutex we hold.)
    const auto it = shard.map.try_emplace(key).first;
    std::shared_ptr<Entry> fresh;
    try {
      fresh = std::make_shared<Entry>(shard, key, std::forward<Args>(args)...);
    } catch (...) {
      shard.map.erase(it);
      throw;
    }
    it->second = fresh;  // noexcept
    return Handle(fresh, &*fresh->value);
  }

  static std::size_t shard_index(const Key& key) {
    const std::uint64_t h = static_cast<std::uint64_t>(Hash{}(key));
    return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> (64 - 6));  // top 6 bits: 64 shards
  }
  static_assert(kShardCount == 64, "shard_index keeps the top 6 bits");

  Shard& shard_for(const Key& key) { return shards_[shard_index(key)]; }
  const Shard& shard_for(const Key& key) const { return shards_[shard_index(key)]; }

  std::array<Shard, kShardCount> shards_;
};

}  // namespace locklab
