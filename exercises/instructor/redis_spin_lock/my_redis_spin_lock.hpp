// my_redis_spin_lock.hpp — REFERENCE SOLUTION of the exercise
// redis_spin_lock (instructor folder). The contract is in the student's
// starter, exercises/redis_spin_lock/my_redis_spin_lock.hpp;
// distributed/spin_lock.{hpp,cpp} is the lab's full version (backoff,
// jitter, local ownership record, misuse errors).
//
// Why each piece
// --------------
// - SET NX PX in ONE command: SETNX then PEXPIRE is two commands, and a
//   client that dies (or is paused) between them leaves a key with no expiry:
//   the lock is held forever.
// - The token (Client::thread_owner()): a plain DEL would delete whatever is
//   there, including the key of the next owner after our lease ran out; the
//   token tells ours from theirs.
// - The Lua compare-and-delete: GET then DEL from the client is two round
//   trips, and between them our lease can run out and another client take the
//   key, which our DEL then deletes. A script runs atomically on the server:
//   nothing interleaves between its GET and its DEL. Keys and tokens travel
//   as KEYS/ARGV, never pasted into the script's text.
// - The last attempt at the deadline: a timed try never reports failure
//   before the time it was given is up.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <type_traits>

#include "distributed/client.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/script.hpp"

namespace locklab::exercises {

// 1: deleted (it was ours); -1: another owner's key; 0: no key.
inline const redis::Script kMyRedisSpinLockRelease("my_redis_spin_lock.release", R"lua(
local v = redis.call('get', KEYS[1])
if v == ARGV[1] then
  redis.call('del', KEYS[1])
  return 1
end
if v then return -1 end
return 0
)lua");

class MyRedisSpinLock {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds lease{10'000};
    std::chrono::milliseconds retry_interval{2};
  };

  MyRedisSpinLock(redis::Client& client, std::string name) : MyRedisSpinLock(client, std::move(name), Options{}) {}
  MyRedisSpinLock(redis::Client& client, std::string name, Options options)
      : client_(client), name_(std::move(name)), options_(options) {}
  MyRedisSpinLock(const MyRedisSpinLock&) = delete;
  MyRedisSpinLock& operator=(const MyRedisSpinLock&) = delete;

  void lock() { (void)acquire_until(Clock::time_point::max()); }

  bool try_lock() { return acquire_until(Clock::now()); }

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    const auto now = Clock::now();
    if (timeout <= timeout.zero()) return acquire_until(now);
    if (std::chrono::duration<double>(timeout) >= std::chrono::duration<double>(Clock::time_point::max() - now)) {
      return acquire_until(Clock::time_point::max());
    }
    return acquire_until(now + std::chrono::ceil<Clock::duration>(timeout));
  }

  template <class C, class D>
  bool try_lock_until(const std::chrono::time_point<C, D>& deadline) {
    if constexpr (std::is_same_v<C, Clock>) {
      return acquire_until(std::chrono::ceil<Clock::duration>(deadline));
    } else {
      return try_lock_for(deadline - C::now());
    }
  }

  void unlock() {
    const std::int64_t r = client_.eval(kMyRedisSpinLockRelease, {name_}, {client_.thread_owner()}).as_integer();
    if (r != 1) throw redis::LockLost(name_, r == -1);
  }

  const std::string& name() const noexcept { return name_; }

 private:
  bool acquire_until(Clock::time_point deadline) {
    const std::string token = client_.thread_owner();
    const std::string lease_ms = std::to_string(options_.lease.count());
    for (;;) {
      if (!client_.command({"SET", name_, token, "NX", "PX", lease_ms}).is_nil()) return true;
      const auto now = Clock::now();
      if (now >= deadline) return false;
      // Never sleep past the deadline: the last attempt is made at it.
      std::this_thread::sleep_until(deadline - now > options_.retry_interval ? now + options_.retry_interval : deadline);
    }
  }

  redis::Client& client_;
  std::string name_;
  Options options_;
};

}  // namespace locklab::exercises
