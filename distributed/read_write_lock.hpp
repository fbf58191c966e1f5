// read_write_lock.hpp — the Redisson RReadWriteLock analogue: readers share
// the lock, a writer excludes everyone, both sides reentrant per owner
// (Client::thread_owner()), each hold under a lease that the watchdog
// renews, waiters parked on pub/sub.
//
// The model
// ---------
// One lock name, two Lockable sides: ReadLock and WriteLock, each built on
// (Client&, name, Options) like every other lock here, and ReadWriteLock,
// which is just the pair on one name (read_lock(), write_lock()). All the
// state is in Redis, so two objects on one name (in one process or many)
// are the same lock; an object only records its own owners' hold counts.
//   - Readers share: a read hold is granted unless another owner holds the
//     write side. Any number of owners may hold read at once.
//   - A writer excludes: a write hold is granted only when no other owner
//     holds either side.
//   - Reentrant: each side counts its owner's holds; unlock as many times.
//   - Downgrade (write -> read) is allowed: the writer takes the read side,
//     then unlocks the write side, and still reads, with no gap in which
//     another writer could get in.
//   - Upgrade (read -> write) is refused: an owner that holds the read side
//     and asks for the write side would wait for itself (two such owners
//     deadlock each other, the classic reason every read-write lock refuses
//     it). Its write acquire throws std::system_error
//     (resource_deadlock_would_occur) at once, from any of lock(),
//     try_lock*(), after one round trip (the server knows every read hold,
//     including ones taken through another object), and changes nothing.
//   - No writer preference (as in Redisson): a reader is granted whenever
//     no writer holds, even while writers wait, so a continuous stream of
//     overlapping readers can keep a writer waiting indefinitely. A writer
//     is bounded only by its own deadline.
//
// State in Redis (every key through lock_keys.hpp's derived_key, so every
// key and channel of one lock hashes to the slot of the name)
// ---------------------------------------------------------------
//   <name>              hash: mode ("read" | "write"); writer (its owner),
//                       w (its hold count) and wexp (its lease end) while
//                       write-held; r:<owner> (that owner's read count) for
//                       each reader.
//   derived "readers"   sorted set: reader owner -> its lease end.
//   derived "fence"     the token counter (Options::fenced; fencing.hpp).
//   channels derived "read_channel" and "write_channel": release messages.
// Lease ends are ms on the SERVER's clock (TIME inside the script), so
// every client judges expiry by one clock (PermitSemaphore does the same).
// Every script first drops the read holds and the write hold whose lease
// has ended and deletes the keys when nothing is left ("purge"). The keys'
// TTL is only garbage collection for a lock whose every owner died: each
// grant or renewal keeps it at least its lease (so at least every lease
// end; set to twice the lease when it falls below, one PTTL per grant and
// the PEXPIREs about once per lease). Why a per-owner lease
// end and not one TTL on the hash (one reader's renewal would keep a dead
// reader's hold alive for ever, and a writer would wait for ever): the
// lease of each reader ends on its own, so a waiting writer is bounded by
// the earliest reader lease, and woken by its own attempt then.
//
// Each operation is one Lua script, one round trip: acquire (read or
// write), release (read or write), renew (read or write). The release
// that frees the lock publishes on both channels; the write release that
// leaves the writer's own read holds (a downgrade) publishes on the read
// channel only (no writer can get in yet). PUBLISH (SPUBLISH on a cluster:
// publishing_script.hpp) is sent with pcall,
// after the write: a refused wake-up never reports a released lock as
// held (waiters then learn at their lease bound).
//
// Waiting
// -------
// As PubSubLock: attempt; on failure subscribe to the side's channel
// (the Client's one Subscriber), attempt again (a release published before
// the subscription was live), then sleep until a message, the blocking
// holder's lease end (the PTTL the script returns: the write lease for a
// reader; for a writer, the earliest reader lease or the write lease), or
// the deadline. The Subscriber wakes ONE waiter per message; readers are
// many, so a reader that gets the lock wakes (pokes) every other reader
// parked on the same ReadLock object: they all attempt, and all get it
// unless a writer came first. Each process's Subscriber gets the message
// and wakes its oldest parked reader, which chains the same way. Readers
// parked on ANOTHER object of the same name in the same process are not
// poked: they attempt at the next message or at their wait bound (the
// writer's lease end), so share one object per name per process.
//
// Leases and the watchdog
// -----------------------
// Options::lease > 0: each hold's lease (renewed by each re-entry of that
// side), whatever the holder does. Options::lease == 0: watchdog_lease
// (30 s), renewed every watchdog_lease / 3 on the Client's LeaseRenewer
// while the owner holds that side; renewing stops at the final unlock, at
// a renewal that finds the hold gone, or with the object. A renewal that
// fails (Redis away) is tried again next period and counted in
// failed_renewals(). (PubSubLock's LeaseRisk reporting is not offered.)
//
// Outcomes (tests/distributed/read_write_lock_test.cpp and the shared
// suites of redis_lock_outcomes.hpp)
// --------
// - unlock() after the hold's lease ended: LockLost (taken_by_other():
//   another owner holds the lock now); the record is cleared, and the
//   outer holds of that side are then a non-holder's (unlike PubSubLock,
//   which reports LockLost once per outer hold).
// - A re-entry whose hold is gone (the lease ended): LockLost at once,
//   nothing granted; the record is cleared.
// - unlock() by an owner this object records as holding nothing:
//   std::system_error(operation_not_permitted), nothing sent (the same as
//   every Redis lock here).
// - Upgrade: std::system_error(resource_deadlock_would_occur), above.
// - An acquire or release with an unknown outcome (redis::Error kTimeout,
//   kIo; kConnect later): before the error leaves, one owner-checked
//   restore script brings that side's count for the owner down to the
//   recorded one, releasing (and publishing) as unlock() would at 0
//   (detail::InDoubt, lock_support.hpp).
// - A lease < 0, a watchdog_lease < 3 ms or either over 100 years
//   (detail::kMaxDuration): std::invalid_argument in the constructor,
//   nothing sent. A name check_lock_name refuses: std::invalid_argument.
// - A foreign value under one of the keys: Error(kServer) quoting Redis.
//
// Costs: 2 round trips per uncontended lock/unlock of either side, the
// same as PubSubLock; one more SUBSCRIBE for the first waiter of a process
// on a side. Every script reads the server's TIME and trims the sorted set
// (O(log n + expired) for n readers); the hash grows by one field per
// concurrent reader. A read lock + unlock runs 16 Redis commands inside its
// two scripts against PubSubLock's 10 (the redis_rwlock suite counts
// them), so a read costs the server more than a mutex hold; readers at
// 100% reads scale with waiters until the server's rate for these
// scripts, since Redis runs one script at a time (the suite's
// server_bound_ops_per_second states that ceiling).
//
// When to use it: a read-mostly resource guarded across processes, whose
// reads are long enough (milliseconds) to be worth sharing. At sections of
// a few microseconds every read still costs two round trips on one
// single-threaded server, so a plain PubSubLock is as fast.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/client.hpp"
#include "distributed/deadline_lockable.hpp"
#include "distributed/lease_renewer.hpp"
#include "distributed/lock_support.hpp"
#include "distributed/subscriber.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis {

// The options of both sides (one name, one set of options).
struct ReadWriteLockOptions {
  // > 0: fixed lease per hold. 0: watchdog mode (see the essay).
  std::chrono::milliseconds lease{0};
  std::chrono::milliseconds watchdog_lease{30'000};
  // Take a fencing token (INCR <name>~fence) in each outermost acquisition
  // of this side.
  bool fenced = false;
};

namespace detail {

// One side of a read-write lock: the protocol of the essay, written once
// for both. Not a public type: ReadLock and WriteLock wrap it.
class ReadWriteSide {
 public:
  enum class Kind { kRead, kWrite };
  ReadWriteSide(Kind kind, Client& client, std::string name, ReadWriteLockOptions options);
  ~ReadWriteSide();
  ReadWriteSide(const ReadWriteSide&) = delete;
  ReadWriteSide& operator=(const ReadWriteSide&) = delete;

  bool acquire(Clock::time_point deadline);
  void unlock();
  std::int64_t hold_count() const { return holds_.count(client_.thread_owner()); }
  std::int64_t token() const;
  const std::string& name() const noexcept { return name_; }
  const std::string& fence_key() const noexcept { return fence_key_; }
  const std::string& channel() const noexcept { return kind_ == Kind::kRead ? read_channel_ : write_channel_; }
  bool fenced() const noexcept { return options_.fenced; }
  std::uint64_t attempts() const noexcept { return attempts_.load(std::memory_order_relaxed); }
  std::uint64_t watchdog_renewals() const noexcept { return renewals_.load(std::memory_order_relaxed); }
  std::uint64_t failed_renewals() const noexcept { return failed_renewals_.load(std::memory_order_relaxed); }

 private:
  const char* who() const noexcept { return kind_ == Kind::kRead ? "ReadLock" : "WriteLock"; }
  WaitAttempt attempt(const std::string& owner);
  void restore(const std::string& owner, std::int64_t want);
  [[noreturn]] void lose(const std::string& owner, bool taken_by_other);
  void watch(const std::string& owner);
  void unwatch(const std::string& owner);
  bool renew(const std::string& owner, std::uint64_t generation);
  void poke_parked_readers();

  const Kind kind_;
  Client& client_;
  std::string name_;
  std::string readers_key_;
  std::string fence_key_;
  std::string read_channel_;
  std::string write_channel_;
  ReadWriteLockOptions options_;
  LocalHolds holds_;
  LocalHolds tokens_;
  InDoubt doubts_;
  std::atomic<std::uint64_t> attempts_{0};
  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> failed_renewals_{0};

  // Watchdog: owner -> (renewal job, generation).
  std::mutex wd_mu_;
  std::map<std::string, std::pair<LeaseRenewer::Id, std::uint64_t>> watched_;  // guarded by wd_mu_
  std::uint64_t watch_generation_ = 0;                                        // guarded by wd_mu_

  // Read side: the subscriptions of this object's parked readers, poked
  // when one of them gets the lock ("Waiting").
  std::mutex parked_mu_;
  std::vector<Subscriber::Subscription*> parked_;  // guarded by parked_mu_
};

}  // namespace detail

namespace detail {

// What ReadLock and WriteLock share: everything but the side they name.
// Derived is the lock itself, so that DeadlineLockable's calls are its own.
template <class Derived, ReadWriteSide::Kind kKind>
class ReadWriteSideLock : public DeadlineLockable<Derived> {
 public:
  using Options = ReadWriteLockOptions;

  // Pre: this thread holds a hold of this side. Throws as in the essay.
  void unlock() { side_.unlock(); }
  std::int64_t hold_count() const { return side_.hold_count(); }
  bool is_held_by_current_thread() const { return hold_count() > 0; }
  // The token of this thread's outermost hold (fenced only; see
  // fenced_acquire.hpp's held_token for the errors).
  std::int64_t token() const { return side_.token(); }
  bool fenced() const noexcept { return side_.fenced(); }
  const std::string& fence_key() const noexcept { return side_.fence_key(); }
  const std::string& name() const noexcept { return side_.name(); }
  const std::string& channel() const noexcept { return side_.channel(); }
  // Acquire-script runs so far; watchdog renewals done and failed.
  std::uint64_t attempts() const noexcept { return side_.attempts(); }
  std::uint64_t watchdog_renewals() const noexcept { return side_.watchdog_renewals(); }
  std::uint64_t failed_renewals() const noexcept { return side_.failed_renewals(); }

 protected:
  // Sends nothing. std::invalid_argument as in the essay.
  ReadWriteSideLock(Client& client, std::string name, Options options)
      : side_(kKind, client, std::move(name), options) {}

 private:
  friend DeadlineLockable<Derived>;
  bool acquire_until(Clock::time_point deadline) { return side_.acquire(deadline); }
  ReadWriteSide side_;
};

}  // namespace detail

// The shared side. lock() / try_lock() / try_lock_for() / try_lock_until()
// (DeadlineLockable) take a read hold; unlock() gives one back.
class ReadLock : public detail::ReadWriteSideLock<ReadLock, detail::ReadWriteSide::Kind::kRead> {
 public:
  ReadLock(Client& client, std::string name, Options options = {})
      : ReadWriteSideLock(client, std::move(name), options) {}
};

// The exclusive side: the same calls, for a write hold. Its acquire throws
// std::system_error(resource_deadlock_would_occur) for an owner that holds
// the read side (upgrade).
class WriteLock : public detail::ReadWriteSideLock<WriteLock, detail::ReadWriteSide::Kind::kWrite> {
 public:
  WriteLock(Client& client, std::string name, Options options = {})
      : ReadWriteSideLock(client, std::move(name), options) {}
};

// Both sides of one name, as Java's ReentrantReadWriteLock hands them out.
// Either side may be used alone; the pair only saves building both.
class ReadWriteLock {
 public:
  using Options = ReadWriteLockOptions;
  ReadWriteLock(Client& client, const std::string& name, Options options = {})
      : read_(client, name, options), write_(client, name, options) {}

  ReadLock& read_lock() noexcept { return read_; }
  WriteLock& write_lock() noexcept { return write_; }
  const std::string& name() const noexcept { return read_.name(); }

 private:
  ReadLock read_;
  WriteLock write_;
};

}  // namespace locklab::redis
