#include "distributed/fenced_acquire.hpp"

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

}  // namespace

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

}  // namespace locklab::redis
