#include "distributed/fair_lock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"

namespace locklab::redis {

namespace {

// Shared by the three scripts (constant text, assembled at compile time).
// KEYS[1] the lock key, KEYS[2] the queue, KEYS[3] the fencing-token
// counter (declared always; INCRed only for an owner that asked for
// tokens); the last ARGV is derived_key_prefix(name) (lock_keys.hpp), the
// prefix of the per-waiter keys.
// A waiter's alive key holds "<lease>" or, if it wants a token, "<lease>f".
#define LOCKLAB_FAIR_LOCK_PRELUDE                                        \
  "local lock, queue, fence = KEYS[1], KEYS[2], KEYS[3]\n"               \
  "local prefix = ARGV[#ARGV]\n"                                         \
  "local function alive(t) return prefix .. 'alive:' .. t end\n"         \
  "local function wake(t) return prefix .. 'wake:' .. t end\n"           \
  "-- Hands the free lock to the first live waiter (dead heads are\n"    \
  "-- dropped); true if one got it. Its wake element is its fencing\n"   \
  "-- token (INCR in this same script) if it asked for one, else '0'.\n" \
  "-- The INCR is the hand-off's first write: a foreign value in the\n"  \
  "-- counter fails the script before the live head is touched.\n"       \
  "local function hand_off()\n"                                          \
  "  while true do\n"                                                    \
  "    local head = redis.call('zrange', queue, 0, 0)[1]\n"              \
  "    if not head then return false end\n"                              \
  "    local entry = redis.call('get', alive(head))\n"                   \
  "    if entry then\n"                                                  \
  "      local lease, fenced = string.match(entry, '^(%d+)(f?)$')\n"     \
  "      local token = '0'\n"                                            \
  "      if fenced == 'f' then token = redis.call('incr', fence) end\n"  \
  "      redis.call('zrem', queue, head)\n"                              \
  "      redis.call('del', alive(head))\n"                               \
  "      redis.call('set', lock, head, 'PX', lease)\n"                   \
  "      redis.call('del', wake(head))\n"                                \
  "      redis.call('rpush', wake(head), token)\n"                       \
  "      redis.call('pexpire', wake(head), lease)\n"                     \
  "      return true\n"                                                  \
  "    end\n"                                                            \
  "    redis.call('zrem', queue, head)\n"                                \
  "  end\n"                                                              \
  "end\n"

// ARGV[1] me, ARGV[2] lease ms, ARGV[3] queue_lease ms, ARGV[4] enqueue
// ('1'/'0'), ARGV[5] fenced ('1'/'0'), ARGV[6] prefix. {1, token} acquired
// (token 0 when not fenced), else {0, the owner's PTTL}.
const Script kAcquire("fair_lock.acquire", LOCKLAB_FAIR_LOCK_PRELUDE R"lua(
local me, lease, qlease, fenced = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[5] == '1'
local holder = redis.call('get', lock)
if holder == me then
  -- Handed off while I was not in BLPOP: the token is in my wake list.
  local token = tonumber(redis.call('lindex', wake(me), 0) or '0') or 0
  if fenced and token < 1 then token = redis.call('incr', fence) end
  redis.call('del', wake(me))
  redis.call('zrem', queue, me)
  redis.call('del', alive(me))
  return {1, token}
end
if not holder then
  while true do
    local head = redis.call('zrange', queue, 0, 0)[1]
    if not head or head == me then
      -- The INCR first: the only write here a foreign value can fail, so
      -- a failing script has not taken the lock (a script is not rolled
      -- back; only dead heads dropped above may precede it).
      local token = 0
      if fenced then token = redis.call('incr', fence) end
      if head then redis.call('zrem', queue, me) end
      redis.call('del', alive(me))
      redis.call('del', wake(me))
      redis.call('set', lock, me, 'PX', lease)
      return {1, token}
    end
    if redis.call('exists', alive(head)) == 1 then
      hand_off()
      break
    end
    redis.call('zrem', queue, head)
  end
end
if ARGV[4] == '1' then
  -- The alive key first, created with its TTL in the same SET: a qlease
  -- Redis refuses fails the script before the queue is written, so the
  -- PEXPIRE of the queue below cannot be refused after a ZADD.
  local entry = lease
  if fenced then entry = lease .. 'f' end
  local queued = redis.call('exists', alive(me)) == 1
  redis.call('set', alive(me), entry, 'PX', qlease)
  if not queued then
    redis.call('zrem', queue, me)
    local last = redis.call('zrange', queue, -1, -1, 'WITHSCORES')
    local rank = 1
    if last[2] then rank = tonumber(last[2]) + 1 end
    redis.call('zadd', queue, rank, me)
  end
  if redis.call('pttl', queue) < qlease then redis.call('pexpire', queue, qlease) end
end
return {0, redis.call('pttl', lock)}
)lua");

// ARGV[1] me, ARGV[2] prefix. 2 handed off, 1 freed, -1 another owner's, 0 no key.
const Script kRelease("fair_lock.release", LOCKLAB_FAIR_LOCK_PRELUDE R"lua(
local holder = redis.call('get', lock)
if holder ~= ARGV[1] then
  if holder then return -1 end
  return 0
end
if hand_off() then return 2 end
redis.call('del', lock)
return 1
)lua");

// ARGV[1] me, ARGV[2] prefix. 1 if a hand-off had reached me (passed on), else 0.
const Script kLeave("fair_lock.leave", LOCKLAB_FAIR_LOCK_PRELUDE R"lua(
local me = ARGV[1]
redis.call('zrem', queue, me)
redis.call('del', alive(me))
redis.call('del', wake(me))
if redis.call('get', lock) == me then
  if not hand_off() then redis.call('del', lock) end
  return 1
end
return 0
)lua");

#undef LOCKLAB_FAIR_LOCK_PRELUDE

}  // namespace

FairLock::FairLock(Client& client, std::string name) : FairLock(client, std::move(name), Options{}) {}

FairLock::FairLock(Client& client, std::string name, Options options)
    : client_(client), name_(std::move(name)), options_(options) {
  check_lock_name("FairLock", name_);
  if (options_.lease.count() <= 0) throw std::invalid_argument("FairLock: lease must be positive");
  if (options_.queue_lease.count() < 3) throw std::invalid_argument("FairLock: queue_lease must be >= 3 ms");
  detail::check_at_most_max("FairLock: lease", options_.lease);
  detail::check_at_most_max("FairLock: queue_lease", options_.queue_lease);
  waiter_key_prefix_ = derived_key_prefix(name_);
  queue_ = derived_key(name_, "queue");
  fence_key_ = FencingTokens::key_for(name_);
}

FairLock::Attempt FairLock::attempt(const std::string& owner, bool enqueue) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  Reply r = client_.eval(kAcquire, {name_, queue_, fence_key_},
                         {owner, std::to_string(options_.lease.count()), std::to_string(options_.queue_lease.count()),
                          enqueue ? "1" : "0", options_.fenced ? "1" : "0", waiter_key_prefix_});
  const auto& parts = r.as_array();
  if (parts.size() != 2) r.unexpected("2 elements");
  if (parts[0].as_integer() == 1) {
    if (options_.fenced) tokens_.set(owner, parts[1].as_integer());
    holds_.set(owner, 1);
    return {true, 0};
  }
  return {false, parts[1].as_integer()};
}

bool FairLock::leave(const std::string& owner) {
  return client_.eval(kLeave, {name_, queue_, fence_key_}, {owner, waiter_key_prefix_}).as_integer() == 1;
}

void FairLock::restore(const std::string& owner) {
  (void)detail::eval_source(client_, kLeave, {name_, queue_, fence_key_}, {owner, waiter_key_prefix_});
}

bool FairLock::acquire_until(Clock::time_point deadline) {
  const std::string owner = client_.thread_owner();
  if (holds_.count(owner) > 0) detail::throw_would_deadlock(name_);
  auto undo = [&] { restore(owner); };
  doubts_.settle(owner, undo);
  const bool may_wait = deadline > Clock::now();
  Attempt a = doubts_.guard(owner, [&] { return attempt(owner, may_wait); }, undo);
  if (a.acquired) return true;
  if (!may_wait) return false;
  const std::string wake_key = waiter_key_prefix_ + "wake:" + owner;
  const auto refresh = options_.queue_lease / 3;
  try {
    for (;;) {
      const auto now = Clock::now();
      if (now >= deadline) {
        (void)leave(owner);  // a hand-off that raced with the deadline is passed on
        return false;
      }
      auto wake = std::min(deadline, now + refresh);
      if (a.pttl_ms >= 0) wake = std::min(wake, detail::after_pttl(now, a.pttl_ms));
      const bool last = wake == deadline;
      const auto wait_ms =
          std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(wake - now).count());
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(wait_ms) / 1000.0);
      Reply r = client_.command_blocking({"BLPOP", wake_key, seconds}, std::chrono::milliseconds(wait_ms));
      if (!r.is_nil()) {  // handed off: <name> holds our owner token already
        if (options_.fenced) {
          // The element is the fencing token the hand-off took for us.
          const auto& kv = r.as_array();
          const std::int64_t token = kv.size() == 2 ? std::strtoll(kv[1].as_string().c_str(), nullptr, 10) : 0;
          // Only a foreign writer of our wake list can cause this; the catch
          // below passes the lock on (leave) and rethrows.
          if (token < 1) r.unexpected("a fair_lock hand-off carrying a fencing token");
          tokens_.set(owner, token);
        }
        holds_.set(owner, 1);
        return true;
      }
      if (last) {
        // Redis times out in whole milliseconds of its own clock: never
        // report false before the caller's deadline.
        std::this_thread::sleep_until(deadline);
        (void)leave(owner);
        return false;
      }
      a = attempt(owner, true);  // refresh our entry; take a lock whose owner died
      if (a.acquired) return true;
    }
  } catch (const Error& e) {
    // Do not leave an entry (or a hand-off) behind. After an unknown
    // outcome (a lost BLPOP reply may have taken our hand-off) a leave that
    // fails is retried before this owner's next call; otherwise it is best
    // effort, and what it cannot remove expires (essay, "Failure modes").
    if (detail::outcome_unknown(e)) {
      doubts_.after_failure(owner, e, undo);
    } else {
      try {
        undo();
      } catch (const Error&) {
      }
    }
    throw;
  }
}

void FairLock::unlock() {
  const std::string owner = detail::end_hold(client_, holds_, tokens_, name_);
  const std::int64_t r = doubts_.guard(
      owner,
      [&] { return client_.eval(kRelease, {name_, queue_, fence_key_}, {owner, waiter_key_prefix_}).as_integer(); },
      [&] { restore(owner); });
  if (r == 2) handoffs_.fetch_add(1, std::memory_order_relaxed);
  if (r < 1) throw LockLost(name_, r == -1);
}

}  // namespace locklab::redis
