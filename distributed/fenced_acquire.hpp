// fenced_acquire.hpp — the low-level pieces the fenced locks share (namespace
// detail, not a public type): the fenced SET NX script and the token()
// lookup. The protocol they implement, and why tokens exist, is the essay
// in fencing.hpp; the resource that checks tokens is fenced_resource.hpp.
//
// Include order: this header includes only client.hpp and lock_support.hpp,
// so every lock header and .cpp may include it without a header including
// them back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "distributed/client.hpp"
#include "distributed/lock_support.hpp"

namespace locklab::redis::detail {

// The acquire script SpinLock and AdaptiveLock run when fenced: SET <key>
// <owner> NX PX <lease>, and on success INCR <fence_key> in the same script.
struct FencedSetNx {
  bool acquired;
  std::int64_t value;  // acquired: the token (>= 1); else the holder's PTTL (-1: no expiry, -2: no key)
};
FencedSetNx fenced_set_nx(Client& client, const std::string& key, const std::string& fence_key,
                          const std::string& owner, std::chrono::milliseconds lease);

// What every lock's token() does: `tokens` is the lock's record of owner ->
// token of its current hold (0: none). std::logic_error if the lock was
// built without Options::fenced (a configuration bug: no token exists);
// std::system_error(operation_not_permitted) if `owner` holds no token.
std::int64_t held_token(const LocalHolds& tokens, bool fenced, const std::string& lock_name,
                        const std::string& owner);

}  // namespace locklab::redis::detail
