// lease_lock.hpp — THE FIX of the exhibit lease_without_fencing (instructor
// folder; the exhibit is exercises/bug_museum/lease_without_fencing/lease_lock.hpp).
//
// What was wrong: nothing the client can do closes the gap. However late it
// checks its lease, a pause can fall between the check and the write's
// arrival, so "I hold the lock" is always a statement about the past. The
// lease makes the lock live (a crashed holder cannot block forever) and, by
// the same token, lets two clients believe they hold it at once.
//
// The fix (Kleppmann's fencing token): the lock service hands out a number
// with every grant, strictly increasing; the client passes it with every
// write; the RESOURCE remembers the highest number it has accepted and
// rejects any write carrying a lower one. A's grant is token 1, B's is 2:
// once B has written with 2, A's late write with 1 is rejected, and A learns
// that its critical section was not protected (it must re-acquire, re-read,
// re-compute). The check moves from the client, which cannot know, to the
// resource, which sees the writes in the order they arrive.
// Requirements: the resource must check (a storage that cannot is the hard
// part in practice), and tokens must be ordered (Redis lock values are
// random strings: a counter (INCR) beside the lock provides them).
// See also distributed/ for the lab's Redis version of fencing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "exercises/bug_museum/lease_without_fencing/lease_lock.hpp"

namespace locklab::museum::fixed {

using museum::ManualClock;

class LeaseLock {
 public:
  LeaseLock(const ManualClock& clock, std::int64_t lease_ms) : clock_(clock), lease_ms_(lease_ms) {}

  // The grant's fencing token (strictly increasing), or nothing if held.
  std::optional<std::uint64_t> try_acquire(const std::string& client) {
    if (holder_ && clock_.now_ms() < expires_at_ms_) return std::nullopt;
    holder_ = client;
    expires_at_ms_ = clock_.now_ms() + lease_ms_;
    return ++last_token_;
  }
  bool holds(const std::string& client) const { return holder_ == client && clock_.now_ms() < expires_at_ms_; }
  void release(const std::string& client) {
    if (holder_ == client) holder_.reset();
  }

 private:
  const ManualClock& clock_;
  std::int64_t lease_ms_;
  std::optional<std::string> holder_;
  std::int64_t expires_at_ms_ = 0;
  std::uint64_t last_token_ = 0;
};

class Account {
 public:
  explicit Account(std::int64_t balance) : balance_(balance) {}
  std::int64_t read() const { return balance_; }
  // Stores the balance if `token` is at least the highest seen; false (and
  // nothing stored) for a stale token.
  bool write(std::int64_t balance, std::uint64_t token) {
    if (token < highest_token_) {
      ++rejected_;
      return false;
    }
    highest_token_ = token;
    balance_ = balance;
    return true;
  }
  int rejected() const { return rejected_; }

 private:
  std::int64_t balance_;
  std::uint64_t highest_token_ = 0;
  int rejected_ = 0;
};

}  // namespace locklab::museum::fixed
