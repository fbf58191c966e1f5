#include "distributed/pub_sub_lock.hpp"

#include <algorithm>
#include <stdexcept>

#include "distributed/fenced_acquire.hpp"
#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/publishing_script.hpp"
#include "distributed/replica_wait.hpp"

namespace locklab::redis {

namespace {

// KEYS[1] lock hash, KEYS[2] (fenced only) the token counter; ARGV[1]
// lease ms, ARGV[2] owner, ARGV[3] the hold count the caller records for
// this owner (0: a new hold; > 0: a re-entry), ARGV[4] (fenced only) '1' if
// the caller has no token for this owner. {1, hold count[, token]} if
// acquired or re-entered (a token when fenced and the hold is outermost or
// the caller has none), {0, PTTL} if another owner holds it, {-1, 1 if
// another owner holds it now else 0} for a re-entry whose hold is gone: a
// re-entry is granted only while the owner's field still exists, never
// turned into a new hold behind the caller's back. A lease outside
// [1, kMaxDuration] is refused before any write: Redis would refuse the
// PEXPIRE only after HINCRBY had created the hash, leaving a lock without a
// TTL that nobody could ever take. For the same reason the INCR, which a
// foreign value in the counter fails (WRONGTYPE, not an integer, overflow),
// runs before HINCRBY: a script is not rolled back, and a failed INCR after
// it would leave a hold that its caller was told it did not get.
const Script kAcquire("pub_sub_lock.acquire", R"lua(
local lease = tonumber(ARGV[1])
if not lease or lease < 1 or lease > )lua" + std::to_string(detail::kMaxDuration.count()) + R"lua( then
  return redis.error_reply('ERR pub_sub_lock.acquire: lease out of range: ' .. ARGV[1])
end
if tonumber(ARGV[3]) > 0 and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return {-1, redis.call('exists', KEYS[1])}
end
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine or redis.call('exists', KEYS[1]) == 0 then
  local token
  if KEYS[2] and (not mine or ARGV[4] == '1') then token = redis.call('incr', KEYS[2]) end
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if token then return {1, n, token} end
  return {1, n}
end
return {0, redis.call('pttl', KEYS[1])}
)lua");

// After a command with an unknown outcome. KEYS[1] lock hash; ARGV[1]
// owner, ARGV[2] the hold count the caller records, ARGV[3] channel. Brings
// the owner's field down to that count if the server counts more (a lost
// acquire or re-entry reply, a lost release): deleted at 0, and with it the
// key and a release message (pcall: a refused PUBLISH must not undo the
// report) when no other field is left. Never raises a
// count or re-creates a hold. Returns the field's count before (0: none).
const PublishingScript kRestore("pub_sub_lock.restore", R"lua(
local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
local want = tonumber(ARGV[2])
if n <= want then return n end
if want > 0 then
  redis.call('hset', KEYS[1], ARGV[1], want)
  return n
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('exists', KEYS[1]) == 0 then redis.pcall(publish, ARGV[3], '0') end
return n
)lua");

// KEYS[1] lock hash; ARGV[1] owner, ARGV[2] channel. Remaining hold count
// (0: released and published), -1 no key, -2 other owner, -3 released but
// the server refused the wake-up PUBLISH (pcall: a script is not rolled
// back, so an error there would report a deleted lock as not released).
const PublishingScript kRelease("pub_sub_lock.release", R"lua(
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  if redis.call('exists', KEYS[1]) == 1 then return -2 end
  return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then return n end
redis.call('del', KEYS[1])
if type(redis.pcall(publish, ARGV[2], '0')) == 'table' then return -3 end
return 0
)lua");

// KEYS[1] lock hash; ARGV[1] lease ms, ARGV[2] owner. 1 renewed; not ours:
// 0 the key is gone, -1 another owner holds it (LeaseRisk::taken_by_other).
const Script kRenew("pub_sub_lock.renew", R"lua(
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
if redis.call('exists', KEYS[1]) == 1 then return -1 end
return 0
)lua");

// kRelease's "released, the wake-up PUBLISH refused".
constexpr std::int64_t kReleasedUnpublished = -3;

}  // namespace

struct PubSubLock::AsyncRequest {
  std::string owner;
  Clock::time_point deadline;
  std::chrono::milliseconds lease;
  std::promise<bool> promise;
  Clock::time_point next_try{};
  bool due = true;
};

PubSubLock::PubSubLock(Client& client, std::string name) : PubSubLock(client, std::move(name), Options{}) {}

PubSubLock::PubSubLock(Client& client, std::string name, Options options)
    : client_(client), name_(std::move(name)), options_(options) {
  check_lock_name("PubSubLock", name_);
  if (options_.lease.count() < 0) throw std::invalid_argument("PubSubLock: negative lease");
  if (options_.watchdog_lease.count() < 3) throw std::invalid_argument("PubSubLock: watchdog_lease must be >= 3 ms");
  detail::check_at_most_max("PubSubLock: lease", options_.lease);
  detail::check_at_most_max("PubSubLock: watchdog_lease", options_.watchdog_lease);
  channel_ = derived_key(name_, "channel");
  fence_key_ = FencingTokens::key_for(name_);
}

PubSubLock::~PubSubLock() {
  // The renewal jobs use this object: none may start or still run once it
  // is gone (in a child made by fork() the parent's timer is not this
  // process's: nothing of it runs here, and nothing is cancelled).
  if (LeaseRenewer* renewer = client_.lease_renewer_if_started()) renewer->cancel_group(this);
  {
    std::lock_guard g(async_mu_);
    async_stop_ = true;
    if (async_poke_target_ != nullptr) async_poke_target_->poke();
    async_cv_.notify_all();
  }
  if (async_worker_.joinable()) async_worker_.join();
}

void PubSubLock::restore(const std::string& owner, std::int64_t want) {
  (void)detail::eval_source(client_, kRestore.on(client_), {name_}, {owner, std::to_string(want), channel_});
}

PubSubLock::Attempt PubSubLock::attempt(const std::string& owner, std::chrono::milliseconds lease) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  auto undo = [&] { restore(owner, holds_.count(owner)); };
  doubts_.settle(owner, undo);
  const std::int64_t held = holds_.count(owner);
  const auto effective = std::to_string(effective_lease(lease).count());
  Reply r = doubts_.guard(
      owner,
      [&] {
        return options_.fenced ? client_.eval(kAcquire, {name_, fence_key_},
                                              {effective, owner, std::to_string(held),
                                               tokens_.count(owner) > 0 ? "0" : "1"})
                               : client_.eval(kAcquire, {name_}, {effective, owner, std::to_string(held)});
      },
      undo);
  const auto& parts = r.as_array();
  if (parts.size() != 2 && parts.size() != 3) {
    r.unexpected("2 or 3 elements");
  }
  const std::int64_t verdict = parts[0].as_integer();
  if (verdict == -1) lose(owner, held, parts[1].as_integer() == 1);  // a re-entry found its hold gone
  if (verdict == 1) {
    if (parts.size() == 3) tokens_.set(owner, parts[2].as_integer());  // a new outermost hold
    holds_.set(owner, parts[1].as_integer());
    if (lease.count() == 0) watch(owner);
    return {true, 0};
  }
  return {false, parts[1].as_integer()};
}

void PubSubLock::lose(const std::string& owner, std::int64_t owed, bool taken_by_other) {
  holds_.set(owner, 0);
  tokens_.set(owner, 0);
  unwatch(owner);
  if (owed > 0) {
    std::lock_guard g(lost_mu_);
    LostHolds& l = lost_[owner];
    l.owed += owed;
    l.taken_by_other = taken_by_other;
  }
  throw LockLost(name_, taken_by_other);
}

bool PubSubLock::try_lock_for(std::chrono::milliseconds wait, std::chrono::milliseconds lease) {
  if (lease.count() < 0) throw std::invalid_argument("PubSubLock::try_lock_for: negative lease");
  detail::check_at_most_max("PubSubLock::try_lock_for: lease", lease);
  if (!acquire(detail::deadline_after(wait), lease)) return false;
  detail::confirm_replicated(client_, name_, [this] { unlock(); });  // as DeadlineLockable's members
  return true;
}

bool PubSubLock::acquire(Clock::time_point deadline, std::chrono::milliseconds lease) {
  const std::string owner = client_.thread_owner();
  const bool may_wait = deadline > Clock::now();
  std::optional<Subscriber::Subscription> sub;
  if (may_wait) {
    // Other waiters of this process already listen: join before attempting,
    // so no re-check is needed after a failure (no round trip either way).
    if (Subscriber* hub = client_.subscriber_if_started()) sub = hub->join_if_subscribed(channel_);
  }
  Attempt a{false, -1};
  bool asked = true;  // a skipper has not asked Redis yet: it must, once, before it gives up
  if (sub && sub->ahead() > 0 && holds_.count(owner) == 0) {
    // Waiters of this process are queued already: no barging past them
    // (see "No barging within a process"). Wait for our turn; the wait
    // bound is our own lease, as if the attempt had found a fresh hold.
    skipped_.fetch_add(1, std::memory_order_relaxed);
    asked = false;
    a.pttl_ms = effective_lease(lease).count();
  } else {
    a = attempt(owner, lease);
    if (a.acquired) return true;
    if (!may_wait || Clock::now() >= deadline) return false;
  }
  if (!sub) {
    sub = client_.subscriber().subscribe(channel_, deadline);
    // Subscribed (or out of time): the re-check that catches a release
    // published before the subscription was live.
    a = attempt(owner, lease);
    if (a.acquired) return true;
    if (!sub) return false;
  }
  return detail::wait_for_release(*sub, deadline, a, asked, [&] { return attempt(owner, lease); });
}

void PubSubLock::unlock() {
  const std::string owner = client_.thread_owner();
  const std::int64_t held = holds_.count(owner);
  if (held == 0) {
    // An outer hold whose lease was lost (found by a re-entry or an inner
    // unlock) is still owed its unlock: report the loss again, typed, with
    // no round trip. Anything else is a non-holder's unlock.
    std::unique_lock g(lost_mu_);
    auto it = lost_.find(owner);
    if (it == lost_.end()) {
      g.unlock();
      detail::throw_not_owner(name_);
    }
    const bool taken = it->second.taken_by_other;
    if (--it->second.owed == 0) lost_.erase(it);
    throw LockLost(name_, taken);
  }
  // This unlock counts, whatever the server says next: the record goes down
  // first, so a restore after an unknown outcome aims at the new count.
  holds_.set(owner, held - 1);
  if (held == 1) {
    tokens_.set(owner, 0);
    unwatch(owner);
  }
  // A previous unknown outcome first: the server back to `held` (if this
  // fails, the doubt stays and its restore aims at held - 1).
  doubts_.settle(owner, [&] { restore(owner, held); });
  std::int64_t left = doubts_.guard(
      owner, [&] { return client_.eval(kRelease.on(client_), {name_}, {owner, channel_}).as_integer(); },
      [&] { restore(owner, holds_.count(owner)); });
  if (left == kReleasedUnpublished) {  // released; only the wake-up was refused
    unpublished_.fetch_add(1, std::memory_order_relaxed);
    left = 0;
  }
  if (left < 0) lose(owner, held - 1, left == -2);
  holds_.set(owner, left);
  if (left == 0) {
    tokens_.set(owner, 0);
    unwatch(owner);
  }
}

// --- watchdog ----------------------------------------------------------------

void PubSubLock::watch(const std::string& owner) {
  std::lock_guard g(wd_mu_);
  auto it = watched_.find(owner);
  // A re-entry: the outermost acquisition's job renews this hold already.
  if (it != watched_.end() && it->second.renewing) return;
  Watch& w = watched_[owner];
  w = Watch{};
  w.generation = ++watch_generation_;
  // Scheduled under wd_mu_ so that unwatch() always finds the job's id; the
  // timer thread never holds the renewer's mutex while it runs a job (which
  // takes wd_mu_), so this order cannot deadlock.
  w.job = client_.lease_renewer().schedule(
      this, options_.watchdog_lease / 3, [this, owner, generation = w.generation] { return renew(owner, generation); });
}

void PubSubLock::unwatch(const std::string& owner) {
  std::lock_guard g(wd_mu_);
  auto it = watched_.find(owner);
  if (it == watched_.end()) return;
  // Not waiting for a renewal in progress: it finds no Watch of its
  // generation and reports nothing (a stale PEXPIRE of an owner-checked
  // renewal lands at most once, as before this unlock).
  if (it->second.renewing) client_.lease_renewer().cancel(it->second.job);
  watched_.erase(it);
}

bool PubSubLock::renew(const std::string& owner, std::uint64_t generation) {
  LeaseRisk verdict{LeaseRisk::Kind::kRenewalFailed, name_, owner, false, {}};
  try {
    const std::int64_t renewed =
        client_.eval(kRenew, {name_}, {std::to_string(options_.watchdog_lease.count()), owner}).as_integer();
    if (renewed == 1) {
      renewals_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    verdict.kind = LeaseRisk::Kind::kLost;
    verdict.taken_by_other = renewed == -1;
  } catch (const std::exception& e) {
    // Unreachable, timed out, connection lost (or a reply not as expected):
    // the lease may still run; try again next period.
    verdict.detail = e.what();
  }
  failed_renewals_.fetch_add(1, std::memory_order_relaxed);
  const bool lost = verdict.kind == LeaseRisk::Kind::kLost;
  {
    std::lock_guard g(wd_mu_);
    auto it = watched_.find(owner);
    // Unlocked (or unlocked and taken again) while this renewal ran: the
    // verdict is about a hold that is over.
    if (it == watched_.end() || it->second.generation != generation) return false;
    Watch& w = it->second;
    if (lost) w.renewing = false;
    // Each kind once per hold, and never kRenewalFailed after kLost.
    if (w.risk && (w.risk->kind == LeaseRisk::Kind::kLost || !lost)) return !lost;
    w.risk = verdict;  // recorded before the callback: the holder sees it first
  }
  if (options_.on_lease_risk) {
    try {
      options_.on_lease_risk(verdict);
    } catch (...) {
      // Dropped (see the header): the timer serves every lock of the Client.
    }
  }
  return !lost;
}

std::optional<PubSubLock::LeaseRisk> PubSubLock::lease_risk() const {
  const std::string owner = client_.thread_owner();
  std::lock_guard g(wd_mu_);
  auto it = watched_.find(owner);
  if (it == watched_.end()) return std::nullopt;
  return it->second.risk;
}

// --- async ---------------------------------------------------------------------

std::future<bool> PubSubLock::try_lock_async(std::chrono::milliseconds wait, std::chrono::milliseconds lease) {
  if (lease.count() < 0) throw std::invalid_argument("PubSubLock::try_lock_async: negative lease");
  detail::check_at_most_max("PubSubLock::try_lock_async: lease", lease);
  AsyncRequest r;
  r.owner = client_.thread_owner();
  r.deadline = detail::deadline_after(wait);
  r.lease = lease;
  std::future<bool> f = r.promise.get_future();
  std::lock_guard g(async_mu_);
  if (async_stop_) {
    r.promise.set_value(false);
    return f;
  }
  async_new_.push_back(std::move(r));
  if (!async_worker_.joinable()) async_worker_ = std::thread([this] { async_loop(); });
  if (async_poke_target_ != nullptr) async_poke_target_->poke();
  async_cv_.notify_all();
  return f;
}

void PubSubLock::async_loop() {
  std::deque<AsyncRequest> pending;
  std::optional<Subscriber::Subscription> sub;
  auto fail_all = [&pending](std::exception_ptr e) {
    for (auto& r : pending) r.promise.set_exception(e);
    pending.clear();
  };
  for (;;) {
    {
      std::unique_lock g(async_mu_);
      if (pending.empty()) {
        async_poke_target_ = nullptr;
        sub.reset();
        async_cv_.wait(g, [this] { return async_stop_ || !async_new_.empty(); });
      }
      if (async_stop_) break;
      while (!async_new_.empty()) {
        pending.push_back(std::move(async_new_.front()));
        async_new_.pop_front();
      }
    }
    const auto now = Clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
      if (!it->due && it->next_try > now && it->deadline > now) {
        ++it;
        continue;
      }
      try {
        const Attempt a = attempt(it->owner, it->lease);
        const auto after = Clock::now();
        if (a.acquired || after >= it->deadline) {
          it->promise.set_value(a.acquired);
          it = pending.erase(it);
          continue;
        }
        it->due = false;
        it->next_try = a.pttl_ms >= 0 ? std::min(it->deadline, detail::after_pttl(after, a.pttl_ms))
                                      : it->deadline;
      } catch (...) {
        it->promise.set_exception(std::current_exception());
        it = pending.erase(it);
        continue;
      }
      ++it;
    }
    if (pending.empty()) continue;
    if (!sub) {
      try {
        sub = client_.subscriber().subscribe(channel_, Clock::time_point::max());
      } catch (...) {
        fail_all(std::current_exception());
        continue;
      }
      {
        std::lock_guard g(async_mu_);
        async_poke_target_ = &*sub;
      }
      for (auto& r : pending) r.due = true;  // the re-check after subscribing
      continue;
    }
    auto wake = Clock::time_point::max();
    for (const auto& r : pending) wake = std::min(wake, r.next_try);
    switch (sub->wait_until(wake)) {
      case Subscriber::Wake::kMessage:
        pending.front().due = true;  // wake-one, oldest first
        break;
      case Subscriber::Wake::kReconnected:
        try {
          (void)sub->resubscribe(Clock::time_point::max());
          for (auto& r : pending) r.due = true;
        } catch (...) {
          fail_all(std::current_exception());
        }
        break;
      case Subscriber::Wake::kTimeout:
      case Subscriber::Wake::kPoked:
        break;
    }
  }
  std::lock_guard g(async_mu_);
  async_poke_target_ = nullptr;
  for (auto& r : pending) r.promise.set_value(false);
  for (auto& r : async_new_) r.promise.set_value(false);
  async_new_.clear();
  sub.reset();
}

}  // namespace locklab::redis
