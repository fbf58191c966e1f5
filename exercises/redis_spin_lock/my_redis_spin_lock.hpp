// my_redis_spin_lock.hpp — YOUR lock for the exercise redis_spin_lock (read
// README.md first): a Redis lock by polling, `SET key token NX PX lease`,
// released by a Lua compare-and-delete. On the lab's redis::Client.
//
// This is the starter: it compiles, and it fails the checks until you fill
// in the methods marked TODO. Run the checks with
//   exercises/check.sh redis_spin_lock      (starts its own redis-server)
//
// The contract
// ------------
// - The key `name` holds the owner's token while the lock is held. The
//   token is client.thread_owner(): random per Client, distinct per thread,
//   so no other thread or process can ever present it.
// - lock(): polls until acquired: one `SET name token NX PX <lease ms>` per
//   attempt (ONE command: why must the expiry be set in the same command as
//   the value?), sleeping retry_interval between attempts.
// - try_lock(): exactly one attempt. try_lock_for(d) / try_lock_until(t):
//   poll until acquired or the deadline; the last attempt is made AT the
//   deadline, so a false return never comes early; a zero or negative
//   timeout (or a past deadline) is a single attempt.
// - The lease: the key expires `lease` after the acquiring SET whatever the
//   holder does, so a crashed holder cannot block everyone forever.
// - unlock(): deletes the key only if it still holds THIS thread's token, in
//   ONE round trip that cannot interleave with another client (a Lua script:
//   redis::Script + client.eval, see distributed/script.hpp). If the key is
//   gone or holds another token (the lease ran out, or this thread never
//   held it), it deletes nothing and throws redis::LockLost(name,
//   taken_by_other) (distributed/lock_lost.hpp).
// - Not reentrant: a holder that calls lock() again waits (until its own
//   lease runs out). No fairness.
// The checks also count round trips (client.round_trips()): an uncontended
// lock() is 1, an unlock() 1 (after the script's first load).
//
// What to look up: SET's NX and PX options, Redis' Lua `redis.call`, KEYS
// and ARGV (never paste the name or token into the script's text), and how
// distributed/spin_lock.{hpp,cpp} does it AFTER you have tried.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "distributed/client.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/script.hpp"

namespace locklab::exercises {

class MyRedisSpinLock {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds lease{10'000};
    std::chrono::milliseconds retry_interval{2};
  };

  // Binds to key `name` on `client` (which must outlive the lock); sends nothing.
  MyRedisSpinLock(redis::Client& client, std::string name) : MyRedisSpinLock(client, std::move(name), Options{}) {}
  MyRedisSpinLock(redis::Client& client, std::string name, Options options)
      : client_(client), name_(std::move(name)), options_(options) {}
  MyRedisSpinLock(const MyRedisSpinLock&) = delete;
  MyRedisSpinLock& operator=(const MyRedisSpinLock&) = delete;

  // Polls until acquired.
  void lock() {
    // TODO(you)
  }

  // One attempt: true if acquired.
  bool try_lock() {
    // TODO(you)
    return true;  // the starter always says yes (false would make std::lock spin forever)
  }

  // Polls until acquired or `timeout` has passed (<= 0: one attempt).
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    // TODO(you)
    (void)timeout;
    return true;  // the starter always says yes
  }

  // Polls until acquired or `deadline` (in the past: one attempt).
  template <class C, class D>
  bool try_lock_until(const std::chrono::time_point<C, D>& deadline) {
    // TODO(you)
    (void)deadline;
    return true;  // the starter always says yes
  }

  // Compare-and-delete in one round trip; redis::LockLost if not ours.
  void unlock() {
    // TODO(you)
  }

  const std::string& name() const noexcept { return name_; }

 private:
  redis::Client& client_;
  std::string name_;
  Options options_;
};

}  // namespace locklab::exercises
