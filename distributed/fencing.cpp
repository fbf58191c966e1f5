#include "distributed/fencing.hpp"

#include <stdexcept>

namespace locklab::redis {

namespace {

std::int64_t integer_or_zero(const Reply& r) { return r.is_nil() ? 0 : r.as_decimal(); }

}  // namespace

// --- FencingTokens ---------------------------------------------------------------

FencingTokens::FencingTokens(Client& client, std::string lock_name) : client_(client) {
  check_lock_name("FencingTokens", lock_name);
  key_ = key_for(lock_name);
}

std::int64_t FencingTokens::next() { return client_.command({"INCR", key_}).as_integer(); }

std::int64_t FencingTokens::current() { return integer_or_zero(client_.command({"GET", key_})); }

}  // namespace locklab::redis
