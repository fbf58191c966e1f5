#include "distributed/fenced_resource.hpp"

#include <stdexcept>

namespace locklab::redis {

namespace {

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

std::int64_t integer_or_zero(const Reply& r) { return r.is_nil() ? 0 : r.as_decimal(); }

}  // namespace

// --- FencedResource --------------------------------------------------------------

FencedResource::FencedResource(Client& client, std::string name)
    : FencedResourceBase(std::move(name), "FencedResource"), client_(client) {}

FenceVerdict FencedResource::write(std::int64_t token, const std::string& value) {
  check_fencing_token(token);
  Reply r = client_.eval(kFencedWrite, {name()}, {std::to_string(token), value});
  const auto& parts = r.as_array();
  if (parts.size() != 2) r.unexpected("2 elements");
  return counted(FenceVerdict{parts[0].as_integer() == 1, parts[1].as_integer()});
}

std::optional<std::string> FencedResource::read() {
  Reply r = client_.command({"HGET", name(), "value"});
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}

FencedResource::Totals FencedResource::totals() {
  Reply r = client_.command({"HMGET", name(), "accepted", "rejected", "token"});
  const auto& parts = r.as_array();
  if (parts.size() != 3) r.unexpected("3 fields from HMGET");
  return Totals{integer_or_zero(parts[0]), integer_or_zero(parts[1]), integer_or_zero(parts[2])};
}

// --- LocalFencedResource ---------------------------------------------------------

FenceVerdict LocalFencedResource::write(std::int64_t token, const std::string& value) {
  check_fencing_token(token);
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
