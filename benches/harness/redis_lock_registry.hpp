// redis_lock_registry.hpp — every Redis lock of distributed/ in one list:
// the redis_locks suite, the stock, vus_table and batch scenarios and the
// shared outcome tests (tests/distributed/redis_lock_outcomes_test.cpp)
// iterate it, so a lock added there is benchmarked, run in each scenario
// and held to the outcome contract with no other C++ edit.
//
// Why the list is a JSON file (benches/redis_locks.json)
// ------------------------------------------------------
// Two languages read it: this C++ and the plotting module
// (notebooks/locklab_plots.py), which must work on committed results without
// any C++ build. A JSON file both can read is the one source: at configure
// time benches/CMakeLists.txt writes redis_lock_registry_data.hpp into the
// build tree (the headers to include, the type list, one RedisLockInfo per
// entry) and re-runs when the file changes; Python reads the file itself.
// The other choices each leave two lists: a C++ table that Python learns
// from the bench binary needs a build for every plot, and a checked-in copy
// for Python is a second list kept equal by a test.
//
// What the registry holds, and what it leaves to each consumer
// -----------------------------------------------------------
// It holds the lock classes (their names are the C++ class names, so the
// type list is generated from them) and the facts a consumer cannot derive
// from the class: reentrant, watchdog, whether the suite also runs it behind
// GuardedLock, and for the cluster table which keys its scripts touch. A
// consumer builds each lock generically: redis_lock_options<L>(settings)
// sets the two options every lock has, lease and fenced. Settings that only
// one lock has (SpinLock's retry interval and backoff) stay with the
// consumer that needs them, which names such a configuration
// "<Lock>(<what differs>)": a case study's parameters are its business, not
// the lock's. The plotting module maps every such name, and Guarded(<Lock>),
// back to its registry entry.
//
// Costs: none at run time beyond a virtual call per lock operation on the
// type-erased AnyRedisLock (nanoseconds, against a round trip's tens of
// microseconds). Building a lock sends nothing (each lock's constructor
// contract).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "distributed/client.hpp"

namespace locklab::bench {

// A list of lock classes, in registry order (a type, never instantiated).
template <class... L>
struct RedisLockTypeList {};

// One entry of benches/redis_locks.json (its "about" explains each field).
struct RedisLockInfo {
  std::string_view name;  // the class in locklab::redis
  bool reentrant = false;
  bool watchdog = false;  // lease 0 = renewed while held
  bool guarded = false;   // the redis_locks suite also runs Guarded(<name>)
  bool fence_in_every_script = false;
  std::vector<std::string_view> per_waiter_keys;  // roles: derived_key(name, <role><owner token>)
  std::string_view keys_note;
  std::string_view fenced_keys_note;
};

}  // namespace locklab::bench

// RedisLockTypes, NonReentrantRedisLockTypes and kRedisLockInfos, generated.
#include "benches/harness/redis_lock_registry_data.hpp"

namespace locklab::bench {

// Every entry, in registry (plot) order.
inline std::span<const RedisLockInfo> redis_locks() { return kRedisLockInfos; }

// The entry called `name`; std::invalid_argument naming the known ones
// otherwise.
inline const RedisLockInfo& redis_lock_info(std::string_view name) {
  for (const RedisLockInfo& info : redis_locks()) {
    if (info.name == name) return info;
  }
  std::string message = "unknown Redis lock '";
  message.append(name).append("'; the registry has:");
  for (const RedisLockInfo& info : redis_locks()) message.append(" ").append(info.name);
  throw std::invalid_argument(message);
}

namespace detail {
template <class F, class... L>
void for_each_in(RedisLockTypeList<L...>, F& f) {
  static_assert(sizeof...(L) == std::extent_v<decltype(kRedisLockInfos)>,
                "the generated type list and table disagree: re-run the configure step");
  std::size_t i = 0;
  (f.template operator()<L>(kRedisLockInfos[i++]), ...);  // a comma fold runs left to right
}
}  // namespace detail

// Calls f.template operator()<L>(info) for each lock, in registry order:
//   for_each_redis_lock([&]<class L>(const RedisLockInfo& info) { ... });
template <class F>
void for_each_redis_lock(F&& f) {
  detail::for_each_in(RedisLockTypes{}, f);
}

// The options every lock has; the rest stay at the lock's defaults.
struct RedisLockSettings {
  std::chrono::milliseconds lease{10'000};
  bool fenced = false;
};

template <class L>
typename L::Options redis_lock_options(const RedisLockSettings& s) {
  typename L::Options o;
  o.lease = s.lease;
  o.fenced = s.fenced;
  return o;
}

// The Lockable calls the benches and scenarios use, with the type erased so
// that one table of locks serves them all.
class AnyRedisLock {
 public:
  virtual ~AnyRedisLock() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
  virtual bool try_lock() = 0;
  virtual bool try_lock_for(std::chrono::milliseconds wait) = 0;
};

template <class L>
class ErasedRedisLock final : public AnyRedisLock {
 public:
  template <class... A>
  explicit ErasedRedisLock(A&&... args) : lock_(std::forward<A>(args)...) {}
  void lock() override { lock_.lock(); }
  void unlock() override { lock_.unlock(); }
  bool try_lock() override { return lock_.try_lock(); }
  bool try_lock_for(std::chrono::milliseconds wait) override { return lock_.try_lock_for(wait); }
  L& get() noexcept { return lock_; }

 private:
  L lock_;
};

// The row called `name` of a consumer's table of rows built from the
// registry (anything with a `name`); std::invalid_argument naming `table`
// and its rows otherwise.
template <class Row>
Row row_named(std::vector<Row> rows, std::string_view name, std::string_view table) {
  std::string message;
  message.append(table).append(": no row '").append(name).append("'; rows:");
  for (Row& row : rows) {
    if (row.name == name) return std::move(row);
    message.append(" ").append(row.name);
  }
  throw std::invalid_argument(message);
}

// The registry's lock `lock` called `name` on `client`, built with
// redis_lock_options. Sends nothing. std::invalid_argument for a lock the
// registry does not have, or options the lock refuses.
inline std::unique_ptr<AnyRedisLock> make_redis_lock(std::string_view lock, redis::Client& client,
                                                     const std::string& name, const RedisLockSettings& s) {
  std::unique_ptr<AnyRedisLock> made;
  for_each_redis_lock([&]<class L>(const RedisLockInfo& info) {
    if (info.name == lock) made = std::make_unique<ErasedRedisLock<L>>(client, name, redis_lock_options<L>(s));
  });
  if (!made) (void)redis_lock_info(lock);  // throws, naming the known locks
  return made;
}

}  // namespace locklab::bench
