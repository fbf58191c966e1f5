// lock_lost.hpp — the error that tells a lock holder its critical section
// was not protected to the end.
//
// A Redis lock is a lease: the key expires after `lease` whatever its holder
// is doing (a GC-like pause, a swapped-out process, a slow critical section,
// a watchdog that could not reach Redis). When the holder finally calls
// unlock(), the owner-checked release script finds the key gone or owned by
// someone else, deletes nothing, and unlock() throws LockLost instead of
// returning normally. Swallowing this is a bug: between the expiry and now
// another client may have been inside the same critical section (the coupon
// sale, docs/case-studies.md#clock-drift-and-fencing-at-a-coupon-sale: 3
// phantom issues from exactly this). The cure is a fencing token checked by
// the resource (fencing.hpp), or a lease longer than any critical section
// (PubSubLock's watchdog).
//
// The reentrant PubSubLock also throws it from a re-entry (lock() by the
// holder) that finds its hold gone, and from the unlock() of each outer
// hold of a lost lease: every critical section the loss cut short is told.
//
// After LockLost the lock object's local state says "not held by this
// thread", so the thread may lock() again. `taken_by_other()` tells whether
// the key existed with another owner (someone else holds it now) or was
// simply gone (expired, nobody took it yet, or deleted by hand).
#pragma once

#include <stdexcept>
#include <string>

namespace locklab::redis {

class LockLost : public std::runtime_error {
 public:
  LockLost(const std::string& lock_name, bool taken_by_other)
      : std::runtime_error("lock '" + lock_name + "' was lost before unlock: its lease expired" +
                           (taken_by_other ? " and another owner holds it now" : " (the key is gone)") +
                           "; the critical section was not protected to its end"),
        name_(lock_name),
        taken_by_other_(taken_by_other) {}

  const std::string& lock_name() const noexcept { return name_; }
  bool taken_by_other() const noexcept { return taken_by_other_; }

 private:
  std::string name_;
  bool taken_by_other_;
};

}  // namespace locklab::redis
