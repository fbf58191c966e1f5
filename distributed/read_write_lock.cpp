#include "distributed/read_write_lock.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "distributed/fenced_acquire.hpp"
#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/publishing_script.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis::detail {

namespace {

// Shared by every script. KEYS[1] the hash, KEYS[2] the readers' sorted
// set (KEYS[3], the token counter, only in the acquires).
//   now_ms()   the server's clock in ms (TIME): every lease end is on it.
//   purge(now) drops the read holds and the write hold whose lease ended;
//              if that leaves nothing, deletes both keys. Returns the mode
//              ('read', 'write') or nil for a free lock. A read-mode hash
//              with no reader arises only from an expiry (the last
//              release deletes it), so the count is asked for only then.
//   extend(key) after a grant or renewal of `lease` ms: keeps both keys'
//              TTL at least `lease` (so at least every lease end: a TTL
//              only falls with time, and each grant checks it), set to
//              2 x lease when it falls below, never shortened. The keys'
//              TTL is garbage collection for owners that all died; the
//              lease ends in the hash and the sorted set are the authority.
//              One PTTL per grant, the PEXPIREs about once per lease.
//   wake(ch)   PUBLISH (SPUBLISH on a cluster: the local `publish` that
//              PublishingScript puts first; only the releases, which are
//              PublishingScripts, call it) with pcall: a refused wake-up
//              must not undo a release.
//   release_target(n, mode, arg)  both releases' arithmetic on the
//              caller's n holds: arg '-' gives one back, a count brings n
//              down to it (never up). Returns the count to leave, or nil
//              and the script's reply when nothing is to change (-1/-2 for
//              no hold, n for a restore that is already at or below it).
// Why no TTL work in the releases: removing a hold never needs a longer
// TTL, and a TTL longer than the remaining holds only delays garbage
// collection.
const std::string kPrelude = R"lua(
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function purge(now)
  local mode = redis.call('hget', KEYS[1], 'mode')
  if not mode then
    redis.call('del', KEYS[2])
    return nil
  end
  local changed = false
  local gone = redis.call('zrangebyscore', KEYS[2], '-inf', now)
  if #gone > 0 then
    for _, o in ipairs(gone) do redis.call('hdel', KEYS[1], 'r:' .. o) end
    redis.call('zremrangebyscore', KEYS[2], '-inf', now)
    changed = true
  end
  if mode == 'write' and tonumber(redis.call('hget', KEYS[1], 'wexp')) <= now then
    redis.call('hdel', KEYS[1], 'writer', 'w', 'wexp')
    mode = 'read'
    redis.call('hset', KEYS[1], 'mode', mode)
    changed = true
  end
  if changed and mode == 'read' and redis.call('zcard', KEYS[2]) == 0 then
    redis.call('del', KEYS[1], KEYS[2])
    return nil
  end
  return mode
end
local function extend(key, lease)
  if redis.call('pttl', key) < lease then
    local ttl = math.max(2 * lease, redis.call('pttl', KEYS[1]))
    redis.call('pexpire', KEYS[1], ttl)
    redis.call('pexpire', KEYS[2], ttl)
  end
end
local function wake(channel)
  redis.pcall(publish, channel, '0')
end
local function release_target(n, mode, arg)
  if arg == '-' then
    if n == 0 then
      if mode then return nil, -2 end
      return nil, -1
    end
    return n - 1
  end
  local to = tonumber(arg)
  if n <= to then return nil, n end
  return to
end
)lua";

// The lease check every acquire and renew runs before any write: Redis
// would refuse a PEXPIRE past its clock only after the hash was written.
// (2 x the maximum, extend's TTL, is still inside Redis's range and Lua's
// exact integers: lock_support.hpp's kMaxDuration.)
std::string lease_check(const char* script) {
  return std::string("local lease = tonumber(ARGV[1])\nif not lease or lease < 1 or lease > ") +
         std::to_string(kMaxDuration.count()) + " then\n  return redis.error_reply('ERR " + script +
         ": lease out of range: ' .. ARGV[1])\nend\n";
}

// ARGV[1] lease ms, ARGV[2] owner, ARGV[3] the read count the caller
// records (> 0: a re-entry), ARGV[4] '1' if the caller has no token for
// the owner, ARGV[5] '1' if fenced. {1, count[, token]} granted; {0, ms
// until the writer's lease ends} refused; {-1, 1 if someone holds the lock
// else 0} a re-entry whose hold is gone. The INCR runs before the writes
// (a foreign counter fails the script with nothing taken).
const Script kAcquireRead("read_write_lock.acquire_read", kPrelude + lease_check("read_write_lock.acquire_read") + R"lua(
local now = now_ms()
local mode = purge(now)
local field = 'r:' .. ARGV[2]
local n = 0
if mode then n = tonumber(redis.call('hget', KEYS[1], field) or '0') end
if tonumber(ARGV[3]) > 0 and n == 0 then
  if mode then return {-1, 1} end
  return {-1, 0}
end
if mode == 'write' then
  local w = redis.call('hmget', KEYS[1], 'writer', 'wexp')
  if w[1] ~= ARGV[2] then return {0, tonumber(w[2]) - now} end
end
local token
if ARGV[5] == '1' and (n == 0 or ARGV[4] == '1') then token = redis.call('incr', KEYS[3]) end
if not mode then redis.call('hset', KEYS[1], 'mode', 'read') end
n = redis.call('hincrby', KEYS[1], field, 1)
redis.call('zadd', KEYS[2], now + lease, ARGV[2])
extend(KEYS[2], lease)
if token then return {1, n, token} end
return {1, n}
)lua");

// As kAcquireRead for the write side, plus {-2, 0}: the owner holds the
// read side (an upgrade, refused). Refused otherwise: {0, ms until the
// earliest reader's lease ends, or the writer's}.
const Script kAcquireWrite("read_write_lock.acquire_write", kPrelude + lease_check("read_write_lock.acquire_write") + R"lua(
local now = now_ms()
local mode = purge(now)
local mine = false
local wexp = 0
if mode == 'write' then
  local w = redis.call('hmget', KEYS[1], 'writer', 'wexp')
  mine = w[1] == ARGV[2]
  wexp = tonumber(w[2])
end
if tonumber(ARGV[3]) > 0 and not mine then
  if mode then return {-1, 1} end
  return {-1, 0}
end
if mode == 'read' then
  if redis.call('hexists', KEYS[1], 'r:' .. ARGV[2]) == 1 then return {-2, 0} end
  local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
  return {0, tonumber(first[2]) - now}
end
if mode == 'write' and not mine then return {0, wexp - now} end
local token
if ARGV[5] == '1' and (not mine or ARGV[4] == '1') then token = redis.call('incr', KEYS[3]) end
redis.call('hset', KEYS[1], 'mode', 'write', 'writer', ARGV[2], 'wexp', now + lease)
local n = redis.call('hincrby', KEYS[1], 'w', 1)
extend(KEYS[1], lease)
if token then return {1, n, token} end
return {1, n}
)lua");

// Release and restore, one script per side. ARGV[1] owner, ARGV[2] '-'
// (release: one hold less) or a count (restore: bring the server's count
// down to it, never up), ARGV[3] read channel, ARGV[4] write channel.
// Release returns the count left, or -1 (no hold and the lock is free) /
// -2 (no hold, someone else holds the lock). Who is woken: the last
// reader's release wakes writers (readers never wait for readers); the
// writer's wakes both when it frees the lock, readers only when its own
// read holds remain (a downgrade: no writer can get in yet).
const PublishingScript kReleaseRead("read_write_lock.release_read", kPrelude + R"lua(
local now = now_ms()
local mode = purge(now)
local field = 'r:' .. ARGV[1]
local n = 0
if mode then n = tonumber(redis.call('hget', KEYS[1], field) or '0') end
local to, reply = release_target(n, mode, ARGV[2])
if not to then return reply end
if to > 0 then
  redis.call('hset', KEYS[1], field, to)
  return to
end
redis.call('hdel', KEYS[1], field)
redis.call('zrem', KEYS[2], ARGV[1])
if mode == 'read' and redis.call('zcard', KEYS[2]) == 0 then
  redis.call('del', KEYS[1], KEYS[2])
  wake(ARGV[4])
end
return 0
)lua");

const PublishingScript kReleaseWrite("read_write_lock.release_write", kPrelude + R"lua(
local now = now_ms()
local mode = purge(now)
local n = 0
if mode == 'write' then
  local w = redis.call('hmget', KEYS[1], 'writer', 'w')
  if w[1] == ARGV[1] then n = tonumber(w[2]) end
end
local to, reply = release_target(n, mode, ARGV[2])
if not to then return reply end
if to > 0 then
  redis.call('hset', KEYS[1], 'w', to)
  return to
end
redis.call('hdel', KEYS[1], 'writer', 'w', 'wexp')
if redis.call('zcard', KEYS[2]) > 0 then
  redis.call('hset', KEYS[1], 'mode', 'read')
  wake(ARGV[3])
else
  redis.call('del', KEYS[1], KEYS[2])
  wake(ARGV[4])
  wake(ARGV[3])
end
return 0
)lua");

// ARGV[1] lease ms, ARGV[2] owner. 1 renewed; 0 the lock is free; -1
// someone else holds it (the owner's hold is gone either way).
const Script kRenewRead("read_write_lock.renew_read", kPrelude + lease_check("read_write_lock.renew_read") + R"lua(
local now = now_ms()
local mode = purge(now)
if mode and redis.call('hexists', KEYS[1], 'r:' .. ARGV[2]) == 1 then
  redis.call('zadd', KEYS[2], 'xx', now + lease, ARGV[2])
  extend(KEYS[2], lease)
  return 1
end
if mode then return -1 end
return 0
)lua");

const Script kRenewWrite("read_write_lock.renew_write", kPrelude + lease_check("read_write_lock.renew_write") + R"lua(
local now = now_ms()
local mode = purge(now)
if mode == 'write' and redis.call('hget', KEYS[1], 'writer') == ARGV[2] then
  redis.call('hset', KEYS[1], 'wexp', now + lease)
  extend(KEYS[1], lease)
  return 1
end
if mode then return -1 end
return 0
)lua");

}  // namespace

ReadWriteSide::ReadWriteSide(Kind kind, Client& client, std::string name, ReadWriteLockOptions options)
    : kind_(kind), client_(client), name_(std::move(name)), options_(options) {
  check_lock_name(who(), name_);
  const std::string w = who();
  if (options_.lease.count() < 0) throw std::invalid_argument(w + ": negative lease");
  if (options_.watchdog_lease.count() < 3) throw std::invalid_argument(w + ": watchdog_lease must be >= 3 ms");
  check_at_most_max(w + ": lease", options_.lease);
  check_at_most_max(w + ": watchdog_lease", options_.watchdog_lease);
  readers_key_ = derived_key(name_, "readers");
  fence_key_ = FencingTokens::key_for(name_);
  read_channel_ = derived_key(name_, "read_channel");
  write_channel_ = derived_key(name_, "write_channel");
}

ReadWriteSide::~ReadWriteSide() {
  if (LeaseRenewer* renewer = client_.lease_renewer_if_started()) renewer->cancel_group(this);
}

std::int64_t ReadWriteSide::token() const { return held_token(tokens_, options_.fenced, name_, client_.thread_owner()); }

void ReadWriteSide::restore(const std::string& owner, std::int64_t want) {
  (void)eval_source(client_, (kind_ == Kind::kRead ? kReleaseRead : kReleaseWrite).on(client_), {name_, readers_key_},
                    {owner, std::to_string(want), read_channel_, write_channel_});
}

WaitAttempt ReadWriteSide::attempt(const std::string& owner) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  auto undo = [&] { restore(owner, holds_.count(owner)); };
  doubts_.settle(owner, undo);
  const std::int64_t held = holds_.count(owner);
  const std::chrono::milliseconds lease = options_.lease.count() > 0 ? options_.lease : options_.watchdog_lease;
  Reply r = doubts_.guard(
      owner,
      [&] {
        return client_.eval(kind_ == Kind::kRead ? kAcquireRead : kAcquireWrite, {name_, readers_key_, fence_key_},
                            {std::to_string(lease.count()), owner, std::to_string(held),
                             tokens_.count(owner) > 0 ? "0" : "1", options_.fenced ? "1" : "0"});
      },
      undo);
  const auto& parts = r.as_array();
  if (parts.size() != 2 && parts.size() != 3) r.unexpected("2 or 3 elements");
  const std::int64_t verdict = parts[0].as_integer();
  if (verdict == -1) lose(owner, parts[1].as_integer() == 1);
  if (verdict == -2) {
    throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                            "WriteLock '" + name_ +
                                "': read-to-write upgrade refused: this thread holds the read lock (unlock it first)");
  }
  if (verdict == 1) {
    if (parts.size() == 3) tokens_.set(owner, parts[2].as_integer());
    holds_.set(owner, parts[1].as_integer());
    if (options_.lease.count() == 0) watch(owner);
    return {true, 0};
  }
  return {false, parts[1].as_integer()};
}

void ReadWriteSide::lose(const std::string& owner, bool taken_by_other) {
  holds_.set(owner, 0);
  tokens_.set(owner, 0);
  unwatch(owner);
  throw LockLost(name_, taken_by_other);
}

void ReadWriteSide::poke_parked_readers() {
  std::lock_guard g(parked_mu_);
  for (Subscriber::Subscription* s : parked_) s->poke();
}

bool ReadWriteSide::acquire(Clock::time_point deadline) {
  const std::string owner = client_.thread_owner();
  WaitAttempt a = attempt(owner);
  if (a.acquired) return true;
  if (deadline <= Clock::now()) return false;
  std::optional<Subscriber::Subscription> sub = client_.subscriber().subscribe(channel(), deadline);
  if (!sub) return attempt(owner).acquired;  // out of time: one last look
  if (kind_ == Kind::kWrite) {
    // Subscribed: the re-check that catches a release published before
    // the subscription was live, then the parked loop.
    a = attempt(owner);
    if (a.acquired) return true;
    return wait_for_release(*sub, deadline, a, true, [&] { return attempt(owner); });
  }
  // A reader is parked (pokeable) BEFORE its re-check: a reader that gets
  // the lock after that re-check failed finds it in parked_, and one that
  // got it before is seen by the re-check itself. No window is left in
  // which a poke could miss it.
  struct Unpark {
    ReadWriteSide& side;
    Subscriber::Subscription* sub;
    ~Unpark() {
      std::lock_guard g(side.parked_mu_);
      side.parked_.erase(std::find(side.parked_.begin(), side.parked_.end(), sub));
    }
  };
  {
    std::lock_guard g(parked_mu_);
    parked_.push_back(&*sub);
  }
  bool got = false;
  {
    Unpark unpark{*this, &*sub};
    a = attempt(owner);
    got = a.acquired || wait_for_release(*sub, deadline, a, true, [&] { return attempt(owner); });
  }
  // No writer holds it now: every reader parked here may read ("Waiting").
  if (got) poke_parked_readers();
  return got;
}

void ReadWriteSide::unlock() {
  const std::string owner = client_.thread_owner();
  const std::int64_t held = holds_.count(owner);
  if (held == 0) throw_not_owner(name_);
  // The record goes down first: a restore after an unknown outcome aims at
  // the new count.
  holds_.set(owner, held - 1);
  if (held == 1) {
    tokens_.set(owner, 0);
    unwatch(owner);
  }
  const Script& release = (kind_ == Kind::kRead ? kReleaseRead : kReleaseWrite).on(client_);
  doubts_.settle(owner, [&] { restore(owner, held); });
  const std::int64_t left = doubts_.guard(
      owner,
      [&] {
        return client_.eval(release, {name_, readers_key_}, {owner, "-", read_channel_, write_channel_}).as_integer();
      },
      [&] { restore(owner, holds_.count(owner)); });
  if (left < 0) lose(owner, left == -2);
  holds_.set(owner, left);
  if (left == 0) {
    tokens_.set(owner, 0);
    unwatch(owner);
  }
}

// --- watchdog ----------------------------------------------------------------

void ReadWriteSide::watch(const std::string& owner) {
  std::lock_guard g(wd_mu_);
  if (watched_.count(owner) > 0) return;  // a re-entry: renewed already
  const std::uint64_t generation = ++watch_generation_;
  // Scheduled under wd_mu_ so unwatch() always finds the id; the timer
  // thread runs jobs with no lock of its own held (lease_renewer.hpp).
  const LeaseRenewer::Id job = client_.lease_renewer().schedule(
      this, options_.watchdog_lease / 3, [this, owner, generation] { return renew(owner, generation); });
  watched_[owner] = {job, generation};
}

void ReadWriteSide::unwatch(const std::string& owner) {
  std::lock_guard g(wd_mu_);
  auto it = watched_.find(owner);
  if (it == watched_.end()) return;
  client_.lease_renewer().cancel(it->second.first);
  watched_.erase(it);
}

bool ReadWriteSide::renew(const std::string& owner, std::uint64_t generation) {
  try {
    const std::int64_t renewed =
        client_
            .eval(kind_ == Kind::kRead ? kRenewRead : kRenewWrite, {name_, readers_key_},
                  {std::to_string(options_.watchdog_lease.count()), owner})
            .as_integer();
    if (renewed == 1) {
      renewals_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  } catch (const std::exception&) {
    // Unreachable or slow: the lease may still run; try again next period.
    failed_renewals_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // The hold is gone: stop renewing it; unlock() will report LockLost.
  failed_renewals_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard g(wd_mu_);
  auto it = watched_.find(owner);
  if (it != watched_.end() && it->second.second == generation) watched_.erase(it);
  return false;
}

}  // namespace locklab::redis::detail
