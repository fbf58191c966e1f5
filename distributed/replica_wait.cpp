#include "distributed/replica_wait.hpp"

#include "distributed/lock_keys.hpp"

namespace locklab::redis::detail {

std::int64_t acknowledging_replicas(Client& client, const std::string& lock_name) {
  const Client::Options& o = client.options();
  const std::vector<Reply> replies =
      client.pipeline({{"SET", derived_key(lock_name, "replicated"), "1", "PX", "1"},
                       {"WAIT", std::to_string(o.wait_replicas), std::to_string(o.wait_timeout.count())}});
  for (const Reply& r : replies) {
    if (r.is_error()) throw Error(Error::Kind::kServer, "WAIT after acquiring '" + lock_name + "': " + r.as_string());
  }
  return replies[1].as_integer();
}

}  // namespace locklab::redis::detail
