// Slow paths of StampedLock: unlocks (with their stamp checks) and
// conversions. The design and the seqlock's memory-order argument are in
// stamped_lock.hpp.
#include "primitives/stamped_lock.hpp"

#include <string>
#include <system_error>

namespace locklab {

void StampedLock::throw_bad_stamp(const char* what, Stamp stamp) {
  throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                          std::string("StampedLock: ") + what + " with stamp " + std::to_string(stamp) +
                              ", which does not hold that lock");
}

void StampedLock::unlock_write(Stamp stamp) {
  if (mode_of(stamp) != kWrite) throw_bad_stamp("unlock_write", stamp);
  // Odd -> next even, only from the stamp's own version: a stale or
  // foreign stamp fails here, and of two unlocks of one stamp only one
  // succeeds. Release: the section's data stores before the even version
  // (essay, 5). Relaxed on failure: nothing was read that is acted upon.
  std::uint64_t v = version_of(stamp);
  if (!version_.compare_exchange_strong(v, v + 1, std::memory_order_release, std::memory_order_relaxed)) {
    throw_bad_stamp("unlock_write", stamp);
  }
  sync_.release(kAllPermits);
}

void StampedLock::unlock_read(Stamp stamp) {
  if (mode_of(stamp) != kRead) throw_bad_stamp("unlock_read", stamp);
  // A read stamp stays current while any read lock is held (no writer can
  // get in); a stale one names a read that has ended. Relaxed: the caller
  // holds (or claims to hold) a read permit, under which version_ cannot
  // change.
  if (version_.load(std::memory_order_relaxed) != version_of(stamp)) throw_bad_stamp("unlock_read", stamp);
  // try_release refuses to take the permits above kAllPermits, i.e. a read
  // unlock when no read lock is held; one read-modify-write decides.
  if (!sync_.try_release(1, kAllPermits)) throw_bad_stamp("unlock_read", stamp);
}

void StampedLock::unlock(Stamp stamp) {
  switch (mode_of(stamp)) {
    case kWrite:
      unlock_write(stamp);
      return;
    case kRead:
      unlock_read(stamp);
      return;
    default:
      throw_bad_stamp("unlock", stamp);
  }
}

StampedLock::Stamp StampedLock::try_convert_to_write_lock(Stamp stamp) noexcept {
  const std::uint64_t v = version_of(stamp);
  switch (mode_of(stamp)) {
    case kWrite:
      return version_.load(std::memory_order_relaxed) == v ? stamp : 0;
    case kRead:
      if (version_.load(std::memory_order_relaxed) != v) return 0;
      // We hold one permit; the rest are free only if we are the only
      // reader (and, fair mode, nobody is queued). The acquire CAS also
      // orders every other reader's unlock before our writes.
      return sync_.try_acquire(kAllPermits - 1) ? begin_write() : 0;
    case kOptimistic:
      if (version_.load(std::memory_order_relaxed) != v) return 0;
      if (!sync_.try_acquire(kAllPermits)) return 0;
      // A writer may have come and gone between the check and the
      // acquisition; holding all permits now, version_ is stable and the
      // permits' acquire shows the last writer's version.
      if (version_.load(std::memory_order_relaxed) != v) {
        sync_.release(kAllPermits);
        return 0;
      }
      return begin_write();
    default:
      return 0;
  }
}

}  // namespace locklab
