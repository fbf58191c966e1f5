// not_replicated.hpp — the error of an acquire that Redis granted but too
// few replicas acknowledged (Client::Options::wait_replicas,
// replica_wait.hpp).
//
// When it is thrown: after a lock's acquire succeeded on the primary, WAIT
// reported fewer than wait_replicas replicas holding the write within
// wait_timeout. The lock has already released what it took (the release's
// own outcome is released()): the caller holds nothing and may retry. Why
// not a false return from try_lock: nothing was contended; the deployment
// could not make the grant durable, which a caller that asked for it must
// not mistake for "someone else holds it" (and lock() has no false to
// return).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace locklab::redis {

class NotReplicated : public std::runtime_error {
 public:
  NotReplicated(const std::string& lock_name, int wanted, std::int64_t acknowledged, bool released)
      : std::runtime_error("lock '" + lock_name + "' was granted by the primary but only " +
                           std::to_string(acknowledged) + " of the " + std::to_string(wanted) +
                           " replicas asked for (wait_replicas) acknowledged it in time; " +
                           (released ? "it was released" : "its release failed too: it ends with its lease")),
        name_(lock_name),
        wanted_(wanted),
        acknowledged_(acknowledged),
        released_(released) {}

  const std::string& lock_name() const noexcept { return name_; }
  int wanted() const noexcept { return wanted_; }
  std::int64_t acknowledged() const noexcept { return acknowledged_; }
  // false: the release after the failed WAIT failed as well (a redis::Error
  // swallowed here); the hold then ends with its lease.
  bool released() const noexcept { return released_; }

 private:
  std::string name_;
  int wanted_;
  std::int64_t acknowledged_;
  bool released_;
};

}  // namespace locklab::redis
