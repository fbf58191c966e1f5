#include "distributed/permit_semaphore.hpp"

#include <algorithm>
#include <stdexcept>

#include "distributed/lock_keys.hpp"
#include "distributed/publishing_script.hpp"
#include "distributed/replica_wait.hpp"
#include "distributed/subscriber.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis {

namespace {

// Shared head of every script: the server's clock in ms, the purge of
// expired permits, and wake(k): publish one message per freed permit, at
// most as many as are free and at most 16 (an acquire that succeeds passes
// the wake-up on, so the cap bounds a script's cost without stranding
// waiters). KEYS[1] permit count, KEYS[2] timeout ZSET; the channel is
// passed in each script's ARGV. Every PUBLISH is a pcall: a script is not
// rolled back, so a PUBLISH the server refuses (an ACL user without
// permission on the channel) must not turn a permit already taken, freed or
// set into an error; the waiters then wake at their expiry bound instead.
constexpr const char* kPrelude = R"lua(
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function free_now()
  local n = tonumber(redis.call('get', KEYS[1]) or '0')
  return math.max(0, n - redis.call('zcard', KEYS[2]))
end
local function wake(k, channel)
  for i = 1, math.min(k, free_now(), 16) do redis.pcall(publish, channel, 'free') end
end
)lua";

// ARGV[1] permit id, ARGV[2] lease ms, ARGV[3] channel, ARGV[4] the count
// to create when the count key is missing (-1: leave it missing).
// {1, 0} acquired; {0, ms until the earliest expiry} or {0, -1} (none held:
// not set up, or zero permits).
const PublishingScript kAcquire("permit_semaphore.acquire", std::string(kPrelude) + R"lua(
local purged = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
local count = redis.call('get', KEYS[1])
if not count and tonumber(ARGV[4]) >= 0 then
  redis.call('set', KEYS[1], ARGV[4])
  count = ARGV[4]
end
local n = tonumber(count or '-1')
if n >= 0 and redis.call('zcard', KEYS[2]) < n then
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
  wake(purged + 1, ARGV[3])
  return {1, 0}
end
wake(purged, ARGV[3])
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] then return {0, math.max(0, tonumber(first[2]) - now)} end
return {0, -1}
)lua");

// ARGV[1] permit id, ARGV[2] channel. 1 released, -1 expired, 0 unknown.
const PublishingScript kRelease("permit_semaphore.release", std::string(kPrelude) + R"lua(
local score = redis.call('zscore', KEYS[2], ARGV[1])
local purged = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
local result = 0
if score then
  if tonumber(score) <= now then
    result = -1
  else
    redis.call('zrem', KEYS[2], ARGV[1])
    purged = purged + 1
    result = 1
  end
end
wake(purged, ARGV[2])
return result
)lua");

// ARGV[1] channel. Permits free now (0 if not set up).
const PublishingScript kAvailable("permit_semaphore.available", std::string(kPrelude) + R"lua(
local purged = redis.call('zremrangebyscore', KEYS[2], '-inf', now)
wake(purged, ARGV[1])
return free_now()
)lua");

// ARGV[1] n, ARGV[2] channel. 1 if set by this call, 0 if it was set.
const PublishingScript kSetPermits("permit_semaphore.set_permits", R"lua(
if redis.call('set', KEYS[1], ARGV[1], 'NX') then
  if tonumber(ARGV[1]) > 0 then redis.pcall(publish, ARGV[2], 'free') end
  return 1
end
return 0
)lua");

std::uint64_t next_permit_number() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

PermitSemaphore::PermitSemaphore(Client& client, std::string name) : client_(client), name_(std::move(name)) {
  check_lock_name("PermitSemaphore", name_);
  timeout_key_ = derived_key(name_, "timeout");
  channel_ = derived_key(name_, "channel");
}

bool PermitSemaphore::try_set_permits(std::int64_t n) {
  if (n < 0) throw std::invalid_argument("PermitSemaphore::try_set_permits: negative permit count " + std::to_string(n));
  return client_.eval(kSetPermits.on(client_), {name_}, {std::to_string(n), channel_}).as_integer() == 1;
}

std::optional<std::int64_t> PermitSemaphore::permits() {
  Reply r = client_.command({"GET", name_});
  if (r.is_nil()) return std::nullopt;
  return r.as_decimal();
}

std::int64_t PermitSemaphore::available_permits() {
  return client_.eval(kAvailable.on(client_), {name_, timeout_key_}, {channel_}).as_integer();
}

void PermitSemaphore::restore(const std::string& id) {
  (void)detail::eval_source(client_, kRelease.on(client_), {name_, timeout_key_}, {id, channel_});
}

detail::WaitAttempt PermitSemaphore::attempt(const std::string& id, const std::string& lease_ms,
                                             const std::string& permits_if_missing) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  return doubts_.guard(
      id,
      [&] {
        Reply r = client_.eval(kAcquire.on(client_), {name_, timeout_key_}, {id, lease_ms, channel_, permits_if_missing});
        const auto& parts = r.as_array();
        if (parts.size() != 2) r.unexpected("2 elements");
        return detail::WaitAttempt{parts[0].as_integer() == 1, parts[1].as_integer()};
      },
      [&] { restore(id); });
}

std::optional<std::string> PermitSemaphore::acquire_until(detail::Clock::time_point deadline,
                                                          std::chrono::milliseconds lease,
                                                          std::optional<std::int64_t> permits_if_missing) {
  std::optional<std::string> id = grant_until(deadline, lease, permits_if_missing);
  if (id) detail::confirm_replicated(client_, name_, [&] { release(*id); });
  return id;
}

std::optional<std::string> PermitSemaphore::grant_until(detail::Clock::time_point deadline,
                                                        std::chrono::milliseconds lease,
                                                        std::optional<std::int64_t> permits_if_missing) {
  using Clock = detail::Clock;
  if (lease.count() <= 0) throw std::invalid_argument("PermitSemaphore: a permit's lease must be positive");
  detail::check_at_most_max("PermitSemaphore: a permit's lease", lease);
  if (permits_if_missing && *permits_if_missing < 0) {
    throw std::invalid_argument("PermitSemaphore: negative permits_if_missing " + std::to_string(*permits_if_missing));
  }
  doubts_.settle_all([&](const std::string& lost) { restore(lost); });
  const std::string id = client_.id() + ":" + std::to_string(next_permit_number());
  const std::string lease_ms = std::to_string(lease.count());
  const std::string create = permits_if_missing ? std::to_string(*permits_if_missing) : "-1";
  const bool may_wait = deadline > Clock::now();
  std::optional<Subscriber::Subscription> sub;
  if (may_wait) {
    // Other waiters of this process already listen: join before attempting
    // (no round trip), so no re-check is needed after a failure.
    if (Subscriber* hub = client_.subscriber_if_started()) sub = hub->join_if_subscribed(channel_);
  }
  detail::WaitAttempt a = attempt(id, lease_ms, create);
  if (a.acquired) return id;
  if (!may_wait || Clock::now() >= deadline) return std::nullopt;
  if (!sub) {
    sub = client_.subscriber().subscribe(channel_, deadline);
    // Subscribed (or out of time): the re-check that catches a release
    // published before the subscription was live.
    a = attempt(id, lease_ms, create);
    if (a.acquired) return id;
    if (!sub) return std::nullopt;
  }
  if (detail::wait_for_release(*sub, deadline, a, true, [&] { return attempt(id, lease_ms, create); })) return id;
  return std::nullopt;
}

void PermitSemaphore::release(const std::string& id) {
  if (id.empty()) throw std::invalid_argument("PermitSemaphore::release: empty permit id");
  doubts_.settle_all([&](const std::string& lost) { restore(lost); });
  const std::int64_t r = doubts_.guard(
      id, [&] { return client_.eval(kRelease.on(client_), {name_, timeout_key_}, {id, channel_}).as_integer(); },
      [&] { restore(id); });
  if (r != 1) throw PermitNotHeld(name_, id, r == -1);
}

}  // namespace locklab::redis
