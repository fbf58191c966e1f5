#include "distributed/lock_keys.hpp"

#include <stdexcept>

namespace locklab::redis {

std::optional<std::string_view> hash_tag(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return std::nullopt;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return std::nullopt;
  return key.substr(open + 1, close - open - 1);
}

void check_lock_name(std::string_view who, std::string_view name) {
  const std::string prefix = std::string(who) + ": ";
  if (name.empty()) throw std::invalid_argument(prefix + "empty name");
  const std::string quoted = "lock name '" + std::string(name) + "'";
  if (name.find(kDerivedKeyMarker) != std::string_view::npos) {
    throw std::invalid_argument(prefix + quoted + " contains '" + kDerivedKeyMarker +
                                "', the character reserved for the keys derived from lock names (lock_keys.hpp)");
  }
  if (!hash_tag(name) && name.find('}') != std::string_view::npos) {
    throw std::invalid_argument(prefix + quoted +
                                " contains '}' but no non-empty {hash tag}: Redis Cluster hashes it whole, and no key "
                                "derived from it could share its slot; use a non-empty tag or no '}' (lock_keys.hpp)");
  }
}

std::string derived_key_prefix(std::string_view name) {
  check_lock_name("Redis lock", name);
  const std::string marker(1, kDerivedKeyMarker);
  if (hash_tag(name)) return std::string(name) + marker;
  return marker + "{" + std::string(name) + "}" + marker;
}

std::string derived_key(std::string_view name, std::string_view role) {
  return derived_key_prefix(name) + std::string(role);
}

}  // namespace locklab::redis
