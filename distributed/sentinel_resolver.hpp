// sentinel_resolver.hpp — finding the primary of a replicated Redis through
// Sentinel: the `redis+sentinel://` URL and the question every Client with
// Client::Options::sentinels asks at start and after a failover.
//
// What it guarantees
// ------------------
// - parse_sentinel_url() reads
//     redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]
//   (a Sentinel without a port is on 26379, Sentinel's own default) into
//   Client::Options with `sentinels` and `sentinel_master` set. The user and
//   password are the data nodes' (primary and replicas); the Sentinels are
//   asked without AUTH. Anything else (no master name, an empty host, a bad
//   port or db, another scheme) is std::invalid_argument naming the problem,
//   with the URL shown redacted (Client::Options::redacted_url).
// - resolve_primary() asks each Sentinel in the listed order
//   `SENTINEL get-master-addr-by-name <master>` and returns the first address
//   one names. None names one (each is down, slow, or does not monitor that
//   name): Error(kConnect) "no Sentinel of h:p,h:p names a primary for
//   '<master>': <each one's answer>", so a wrong name and a dead quorum read
//   differently. Bounded: at most one connect (connect_timeout) and one
//   command (command_timeout) per Sentinel.
//
// What an answer means: the address the asked Sentinel believes is the
// primary now. During a failover it is the old primary until a Sentinel has
// promoted a replica and the others have learnt it (a few seconds with the
// timings of embedded_replica_set.hpp); a Client that reconnects to it then
// gets kConnect (dead) or a -READONLY reply (demoted), and asks again.
//
// Cost: one TCP connect and one round trip to the first Sentinel that
// answers; nothing is kept open between questions (they are rare: start-up
// and failures).
#pragma once

#include <string>
#include <string_view>

#include "distributed/client.hpp"

namespace locklab::redis {

// Sentinel's own default port, used when a URL gives a Sentinel without one.
inline constexpr int kDefaultSentinelPort = 26379;

// See the essay. Throws std::invalid_argument for a malformed URL.
Client::Options parse_sentinel_url(std::string_view url);

struct PrimaryAddress {
  std::string host;
  int port = 0;
  std::string endpoint() const { return host + ":" + std::to_string(port); }
};

// Asks options.sentinels (in order) for options.sentinel_master's primary.
// Throws std::invalid_argument if options.sentinels is empty or
// sentinel_master is empty, Error(kConnect) when no Sentinel names one.
PrimaryAddress resolve_primary(const Client::Options& options);

}  // namespace locklab::redis
