// lease_lock.hpp — EXHIBIT lease_without_fencing (bug museum; read
// README.md): a lock with a lease, as every distributed lock has one (Redis
// SET NX PX, ZooKeeper sessions, etcd leases), and a storage service that
// trusts whoever holds it. Simulated in one process with a manual clock, so
// that a "process pause" is one line and the demonstration is exact.
//
// The parts
// ---------
// - ManualClock: time in milliseconds that moves only when told (advance()).
//   It stands for the lock service's clock.
// - LeaseLock: grants the lock to a client for `lease` ms; grants it again
//   to anyone once the lease has expired (that is the point of a lease: a
//   crashed holder cannot block everyone forever). holds(client) tells a
//   client whether its lease is still valid NOW.
// - Account: the protected resource (a balance in a storage service). It
//   accepts every write: it trusts that only the lock holder writes.
//
// The client's code (see the test) is the textbook: acquire, read, compute,
// write, release; it even checks that it still holds the lease right before
// writing. A pause (GC, swap, a VM migration, SIGSTOP) anywhere between that
// check and the write arrives at the account after the lease has expired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace locklab::museum {

class ManualClock {
 public:
  std::int64_t now_ms() const { return now_ms_; }
  void advance(std::int64_t ms) { now_ms_ += ms; }

 private:
  std::int64_t now_ms_ = 0;
};

class LeaseLock {
 public:
  LeaseLock(const ManualClock& clock, std::int64_t lease_ms) : clock_(clock), lease_ms_(lease_ms) {}

  // Grants the lock to `client` if it is free or the lease has expired.
  bool try_acquire(const std::string& client) {
    if (holder_ && clock_.now_ms() < expires_at_ms_) return false;
    holder_ = client;
    expires_at_ms_ = clock_.now_ms() + lease_ms_;
    return true;
  }
  // True if `client` holds a lease that has not expired yet.
  bool holds(const std::string& client) const { return holder_ == client && clock_.now_ms() < expires_at_ms_; }
  void release(const std::string& client) {
    if (holder_ == client) holder_.reset();
  }

 private:
  const ManualClock& clock_;
  std::int64_t lease_ms_;
  std::optional<std::string> holder_;
  std::int64_t expires_at_ms_ = 0;
};

class Account {
 public:
  explicit Account(std::int64_t balance) : balance_(balance) {}
  std::int64_t read() const { return balance_; }
  // Stores the new balance. Whoever calls it.
  void write(std::int64_t balance) {
    balance_ = balance;
    ++writes_;
  }
  int writes() const { return writes_; }

 private:
  std::int64_t balance_;
  int writes_ = 0;
};

}  // namespace locklab::museum
