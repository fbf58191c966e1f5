#include "distributed/adaptive_lock.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <thread>

#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/publishing_script.hpp"
#include "distributed/subscriber.hpp"
#include "distributed/wait_for_release.hpp"

namespace locklab::redis {

namespace {

// KEYS[1] lock key; ARGV[1] owner, ARGV[2] lease ms.
// -2 if acquired, else the holder's PTTL (-1: a key without expiry).
const Script kAcquire("adaptive_lock.acquire", R"lua(
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -2 end
return redis.call('pttl', KEYS[1])
)lua");

// KEYS[1] lock key; ARGV[1] owner, ARGV[2] channel.
// 1: deleted and published; 2: deleted, the wake-up PUBLISH refused (pcall:
// a script is not rolled back, so an error there would report a deleted
// lock as not released); -1: someone else's key; 0: no key.
const PublishingScript kRelease("adaptive_lock.release", R"lua(
local v = redis.call('get', KEYS[1])
if v == ARGV[1] then
  redis.call('del', KEYS[1])
  if type(redis.pcall(publish, ARGV[2], '0')) == 'table' then return 2 end
  return 1
end
if v then return -1 end
return 0
)lua");

}  // namespace

AdaptiveLock::AdaptiveLock(Client& client, std::string name) : AdaptiveLock(client, std::move(name), Options{}) {}

AdaptiveLock::AdaptiveLock(Client& client, std::string name, Options options)
    : client_(client), name_(std::move(name)), options_(options), budget_us_(options.initial_spin.count()) {
  check_lock_name("AdaptiveLock", name_);
  if (options_.lease.count() <= 0) throw std::invalid_argument("AdaptiveLock: lease must be positive");
  if (options_.min_spin.count() <= 0 || options_.min_spin > options_.max_spin) {
    throw std::invalid_argument("AdaptiveLock: need 0 < min_spin <= max_spin");
  }
  if (options_.initial_spin < options_.min_spin || options_.initial_spin > options_.max_spin) {
    throw std::invalid_argument("AdaptiveLock: initial_spin must lie in [min_spin, max_spin]");
  }
  if (options_.spin_pause.count() < 0) throw std::invalid_argument("AdaptiveLock: negative spin_pause");
  detail::check_at_most_max("AdaptiveLock: lease", options_.lease);
  detail::check_at_most_max("AdaptiveLock: max_spin", options_.max_spin);
  detail::check_at_most_max("AdaptiveLock: spin_pause", options_.spin_pause);
  channel_ = derived_key(name_, "channel");
  fence_key_ = FencingTokens::key_for(name_);
}

void AdaptiveLock::restore(const std::string& owner) {
  (void)detail::eval_source(client_, kRelease.on(client_), {name_}, {owner, channel_});
}

bool AdaptiveLock::try_set(const std::string& owner) {
  if (options_.fenced) {
    std::int64_t pttl_ms = -1;  // a spinner retries regardless
    return try_script(owner, pttl_ms);
  }
  attempts_.fetch_add(1, std::memory_order_relaxed);
  return doubts_.guard(
      owner,
      [&] { return !client_.command({"SET", name_, owner, "NX", "PX", std::to_string(options_.lease.count())}).is_nil(); },
      [&] { restore(owner); });
}

bool AdaptiveLock::try_script(const std::string& owner, std::int64_t& pttl_ms) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  return doubts_.guard(owner, [&] { return run_script(owner, pttl_ms); }, [&] { restore(owner); });
}

bool AdaptiveLock::run_script(const std::string& owner, std::int64_t& pttl_ms) {
  if (options_.fenced) {
    const detail::FencedSetNx r = detail::fenced_set_nx(client_, name_, fence_key_, owner, options_.lease);
    if (r.acquired) {
      tokens_.set(owner, r.value);
      return true;
    }
    pttl_ms = r.value;
    return false;
  }
  const std::int64_t r = client_.eval(kAcquire, {name_}, {owner, std::to_string(options_.lease.count())}).as_integer();
  if (r == -2) return true;
  pttl_ms = r;
  return false;
}

void AdaptiveLock::adjust_budget(bool spin_won) {
  // Relaxed load + store: a heuristic; a lost update is harmless (essay).
  const std::int64_t b = budget_us_.load(std::memory_order_relaxed);
  const std::int64_t next = spin_won ? b + std::max<std::int64_t>(b / 4, 1) : b - b / 2;
  budget_us_.store(std::clamp(next, static_cast<std::int64_t>(options_.min_spin.count()),
                              static_cast<std::int64_t>(options_.max_spin.count())),
                   std::memory_order_relaxed);
}

AdaptiveLock::Spin AdaptiveLock::spin(const std::string& owner, std::uint64_t seen, Clock::time_point deadline) {
  // One spinner per object: the slot is a hint, not a guard (two spinners
  // would only cost CPU), so a relaxed exchange is enough.
  if (spinning_.exchange(true, std::memory_order_relaxed)) return Spin::kSlotTaken;
  struct LeaveSlot {
    std::atomic<bool>& slot;
    ~LeaveSlot() { slot.store(false, std::memory_order_relaxed); }
  } leave{spinning_};
  const auto spin_end = Clock::now() + spin_budget();
  for (;;) {
    const auto now = Clock::now();
    if (now >= spin_end) return Spin::kRanOut;
    if (now >= deadline) return Spin::kCutByDeadline;
    // Relaxed: the epoch only says WHEN to ask Redis; the SET NX that
    // follows decides, and orders nothing through this counter. A stale
    // read delays the attempt by one turn of this loop.
    const std::uint64_t now_seen = releases_.load(std::memory_order_relaxed);
    if (now_seen != seen) {
      seen = now_seen;
      if (try_set(owner)) return Spin::kWon;
    } else if (options_.spin_pause.count() > 0) {
      std::this_thread::sleep_for(options_.spin_pause);
    } else {
      // Not a pure busy loop: on two cores the holder may need this one.
      std::this_thread::yield();
    }
  }
}

bool AdaptiveLock::acquire_until(Clock::time_point deadline) {
  const std::string owner = client_.thread_owner();
  if (holds_.count(owner) > 0) detail::throw_would_deadlock(name_);
  doubts_.settle(owner, [&] { restore(owner); });
  auto won = [&](std::atomic<std::uint64_t>* counter) {
    holds_.set(owner, 1);
    if (counter != nullptr) counter->fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  const bool may_wait = deadline > Clock::now();
  std::optional<Subscriber::Subscription> sub;
  // Waiters of this process already listen: join them (no round trip).
  if (may_wait) {
    if (Subscriber* hub = client_.subscriber_if_started()) sub = hub->join_if_subscribed(channel_);
  }
  detail::WaitAttempt a{false, -1};
  bool asked = true;  // a skipper has not asked Redis yet: it must, once, before it gives up
  if (sub && sub->ahead() > 0) {
    // A queue has formed here: no attempt, no spin, wait for our turn (as
    // PubSubLock does). The wait bound is a lease, as if the attempt had
    // found a fresh hold.
    asked = false;
    a.pttl_ms = options_.lease.count();
  } else {
    // Read the epoch before the first attempt, so that a release between
    // that attempt and the spin is not missed.
    const std::uint64_t seen = releases_.load(std::memory_order_relaxed);
    // Subscribed already (members who all got their turn): the script,
    // whose PTTL bounds the sleep; else a bare SET NX.
    if (sub ? try_script(owner, a.pttl_ms) : try_set(owner)) return won(nullptr);
    if (!may_wait || Clock::now() >= deadline) return false;
    // Phase 1: spin against this object's release epoch, not the server.
    switch (spin(owner, seen, deadline)) {
      case Spin::kWon:
        adjust_budget(true);
        return won(&spin_wins_);
      case Spin::kRanOut:
        adjust_budget(false);
        break;
      case Spin::kCutByDeadline:
        // Says nothing about the budget. The last attempt, at the deadline.
        return try_script(owner, a.pttl_ms) ? won(&park_wins_) : false;
      case Spin::kSlotTaken:
        break;
    }
    // Phase 2: subscribe, then the re-check that catches a release
    // published before the subscription was live.
    if (!sub) {
      sub = client_.subscriber().subscribe(channel_, deadline);
      if (try_script(owner, a.pttl_ms)) return won(&park_wins_);
      if (!sub) return false;
    }
  }
  // Woken, attempt with a bare SET NX: no Lua, and on this lock's hot path
  // that is most of the server's CPU per acquisition (benches/
  // redis_locks_bench.cpp). A failure means someone took the lock since the
  // release: its lease is unknown without the script, so this lock's own
  // lease stands in for it as the sleep's bound, and when that estimate runs
  // out the attempt is the script, which reads the holder's true PTTL.
  auto estimate_end = Clock::time_point::max();  // max: the last PTTL is the server's
  const bool acquired = detail::wait_for_release(*sub, deadline, a, asked, [&] {
    detail::WaitAttempt next;
    const auto now = Clock::now();
    if (now >= estimate_end) {
      estimate_end = Clock::time_point::max();
      next.acquired = try_script(owner, next.pttl_ms);
      return next;
    }
    next.acquired = try_set(owner);
    if (!next.acquired) {
      estimate_end = now + options_.lease;
      next.pttl_ms = options_.lease.count();
    }
    return next;
  });
  return acquired ? won(&park_wins_) : false;
}

void AdaptiveLock::unlock() {
  const std::string owner = detail::end_hold(client_, holds_, tokens_, name_);
  const std::int64_t r = doubts_.guard(
      owner, [&] { return client_.eval(kRelease.on(client_), {name_}, {owner, channel_}).as_integer(); },
      [&] { restore(owner); });
  if (r == 2) unpublished_.fetch_add(1, std::memory_order_relaxed);
  if (r != 1 && r != 2) throw LockLost(name_, r == -1);
  // Tell this object's spinner (relaxed: see spin()).
  releases_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace locklab::redis
