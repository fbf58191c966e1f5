#include "distributed/spin_lock.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <thread>

#include "distributed/fencing.hpp"
#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"

namespace locklab::redis {

const Script& compare_and_delete_script() {
  // 1: deleted (ours); -1: someone else's key; 0: no key.
  static const Script script("compare_and_delete", R"lua(
local v = redis.call('get', KEYS[1])
if v == ARGV[1] then
  redis.call('del', KEYS[1])
  return 1
end
if v then return -1 end
return 0
)lua");
  return script;
}

namespace {

double uniform01() {
  thread_local std::minstd_rand rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

SpinLock::SpinLock(Client& client, std::string name) : SpinLock(client, std::move(name), Options{}) {}

SpinLock::SpinLock(Client& client, std::string name, Options options)
    : client_(client), name_(std::move(name)), options_(options) {
  check_lock_name("SpinLock", name_);
  if (options_.lease.count() <= 0) throw std::invalid_argument("SpinLock: lease must be positive");
  if (options_.retry_interval.count() <= 0 || options_.max_interval.count() <= 0) {
    throw std::invalid_argument("SpinLock: retry_interval and max_interval must be positive");
  }
  detail::check_at_most_max("SpinLock: lease", options_.lease);
  detail::check_at_most_max("SpinLock: retry_interval", options_.retry_interval);
  detail::check_at_most_max("SpinLock: max_interval", options_.max_interval);
  if (options_.multiplier < 1.0) throw std::invalid_argument("SpinLock: multiplier must be >= 1");
  if (options_.jitter < 0.0 || options_.jitter > 1.0) throw std::invalid_argument("SpinLock: jitter must be in [0, 1]");
  fence_key_ = FencingTokens::key_for(name_);
}

bool SpinLock::attempt(const std::string& owner) {
  attempts_.fetch_add(1, std::memory_order_relaxed);
  if (options_.fenced) {
    const detail::FencedSetNx r = detail::fenced_set_nx(client_, name_, fence_key_, owner, options_.lease);
    if (r.acquired) tokens_.set(owner, r.value);
    return r.acquired;
  }
  Reply r = client_.command({"SET", name_, owner, "NX", "PX", std::to_string(options_.lease.count())});
  return !r.is_nil();
}

void SpinLock::restore(const std::string& owner) {
  (void)detail::eval_source(client_, compare_and_delete_script(), {name_}, {owner});
}

bool SpinLock::acquire_until(Clock::time_point deadline) {
  const std::string owner = client_.thread_owner();
  if (holds_.count(owner) > 0) detail::throw_would_deadlock(name_);
  auto undo = [&] { restore(owner); };
  doubts_.settle(owner, undo);
  double interval_ms = static_cast<double>(options_.retry_interval.count());
  for (;;) {
    if (doubts_.guard(owner, [&] { return attempt(owner); }, undo)) {
      holds_.set(owner, 1);
      return true;
    }
    const auto now = Clock::now();
    if (now >= deadline) return false;
    double sleep_ms = interval_ms * (1.0 - options_.jitter * uniform01());
    if (options_.backoff == Backoff::kExponential) {
      interval_ms = std::min(interval_ms * options_.multiplier, static_cast<double>(options_.max_interval.count()));
    }
    const auto wake = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(sleep_ms));
    // The last attempt is made at the deadline, so false never comes early.
    std::this_thread::sleep_until(std::min(wake, deadline));
  }
}

void SpinLock::unlock() {
  const std::string owner = detail::end_hold(client_, holds_, tokens_, name_);
  const std::int64_t r = doubts_.guard(
      owner, [&] { return client_.eval(compare_and_delete_script(), {name_}, {owner}).as_integer(); },
      [&] { restore(owner); });
  if (r != 1) throw LockLost(name_, r == -1);
}

}  // namespace locklab::redis
