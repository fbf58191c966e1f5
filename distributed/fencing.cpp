#include "distributed/fencing.hpp"

#include <stdexcept>
#include <system_error>

namespace locklab::redis {

namespace {

// KEYS[1] lock key, KEYS[2] fence counter; ARGV[1] owner, ARGV[2] lease ms.
// {1, token} if acquired (the SET and INCR in one script: token order is
// acquisition order), else {0, PTTL of the holder's key}. The INCR runs
// first: it is the one write a foreign value can fail (WRONGTYPE, not an
// integer, overflow), and a script is not rolled back, so a failed INCR
// after the SET would leave a lock key its caller was told it did not get.
// The SET cannot fail: the key is absent and the lease in range.
const Script kFencedSetNx("fenced.set_nx", R"lua(
if redis.call('exists', KEYS[1]) == 1 then return {0, redis.call('pttl', KEYS[1])} end
local token = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, token}
)lua");

// KEYS[1] resource hash; ARGV[1] token, ARGV[2] value.
// {1, token} accepted, {0, highest} rejected.
const Script kFencedWrite("fenced_resource.write", R"lua(
local highest = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
local t = tonumber(ARGV[1])
if t > highest then
  redis.call('hset', KEYS[1], 'value', ARGV[2], 'token', ARGV[1])
  redis.call('hincrby', KEYS[1], 'accepted', 1)
  return {1, t}
end
redis.call('hincrby', KEYS[1], 'rejected', 1)
return {0, highest}
)lua");

void check_token(std::int64_t token) {
  if (token < 1) {
    throw std::invalid_argument("fencing token " + std::to_string(token) +
                                " is not a token: INCR issues 1, 2, 3 ... (nothing was written)");
  }
}

std::int64_t integer_or_zero(const Reply& r) { return r.is_nil() ? 0 : r.as_decimal(); }

}  // namespace

// --- FencingTokens ---------------------------------------------------------------

FencingTokens::FencingTokens(Client& client, std::string lock_name) : client_(client) {
  check_lock_name("FencingTokens", lock_name);
  key_ = key_for(lock_name);
}

std::int64_t FencingTokens::next() { return client_.command({"INCR", key_}).as_integer(); }

std::int64_t FencingTokens::current() { return integer_or_zero(client_.command({"GET", key_})); }

// --- FencedSpinLock --------------------------------------------------------------

namespace {

SpinLock::Options spin_options(const FencedSpinLock::Options& o) {
  SpinLock::Options s;
  s.lease = o.lease;
  s.retry_interval = o.retry_interval;
  s.jitter = o.jitter;
  s.fenced = true;
  return s;
}

}  // namespace

FencedSpinLock::FencedSpinLock(Client& client, std::string name) : FencedSpinLock(client, std::move(name), Options{}) {}

FencedSpinLock::FencedSpinLock(Client& client, std::string name, Options options)
    : lock_(client, std::move(name), spin_options(options)) {}

// --- the shared pieces of the fenced locks ------------------------------------------

namespace detail {

FencedSetNx fenced_set_nx(Client& client, const std::string& key, const std::string& fence_key,
                          const std::string& owner, std::chrono::milliseconds lease) {
  Reply r = client.eval(kFencedSetNx, {key, fence_key}, {owner, std::to_string(lease.count())});
  const auto& parts = r.as_array();
  if (parts.size() != 2) r.unexpected("2 elements");
  return FencedSetNx{parts[0].as_integer() == 1, parts[1].as_integer()};
}

std::int64_t held_token(const LocalHolds& tokens, bool fenced, const std::string& lock_name,
                        const std::string& owner) {
  if (!fenced) {
    throw std::logic_error("Redis lock '" + lock_name +
                           "' issues no fencing tokens: build it with Options::fenced = true");
  }
  const std::int64_t token = tokens.count(owner);
  if (token < 1) {
    throw std::system_error(std::make_error_code(std::errc::operation_not_permitted),
                            "token of Redis lock '" + lock_name + "' asked by a thread that does not hold it");
  }
  return token;
}

}  // namespace detail

// --- FencedResource --------------------------------------------------------------

FencedResource::FencedResource(Client& client, std::string name) : client_(client), name_(std::move(name)) {
  if (name_.empty()) throw std::invalid_argument("FencedResource: empty name");
}

FenceVerdict FencedResource::write(std::int64_t token, const std::string& value) {
  check_token(token);
  Reply r = client_.eval(kFencedWrite, {name_}, {std::to_string(token), value});
  const auto& parts = r.as_array();
  if (parts.size() != 2) r.unexpected("2 elements");
  FenceVerdict v{parts[0].as_integer() == 1, parts[1].as_integer()};
  (v.accepted ? accepted_ : rejected_).fetch_add(1, std::memory_order_relaxed);
  return v;
}

std::optional<std::string> FencedResource::read() {
  Reply r = client_.command({"HGET", name_, "value"});
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}

FencedResource::Totals FencedResource::totals() {
  Reply r = client_.command({"HMGET", name_, "accepted", "rejected", "token"});
  const auto& parts = r.as_array();
  if (parts.size() != 3) r.unexpected("3 fields from HMGET");
  return Totals{integer_or_zero(parts[0]), integer_or_zero(parts[1]), integer_or_zero(parts[2])};
}

// --- LocalFencedResource ---------------------------------------------------------

FenceVerdict LocalFencedResource::write(std::int64_t token, const std::string& value) {
  check_token(token);
  std::lock_guard g(mu_);
  if (token > highest_) {
    highest_ = token;
    value_ = value;
    ++accepted_;
    return {true, token};
  }
  ++rejected_;
  return {false, highest_};
}

std::optional<std::string> LocalFencedResource::read() const {
  std::lock_guard g(mu_);
  return value_;
}

std::int64_t LocalFencedResource::highest() const {
  std::lock_guard g(mu_);
  return highest_;
}

std::uint64_t LocalFencedResource::accepted() const {
  std::lock_guard g(mu_);
  return accepted_;
}

std::uint64_t LocalFencedResource::rejected() const {
  std::lock_guard g(mu_);
  return rejected_;
}

}  // namespace locklab::redis
