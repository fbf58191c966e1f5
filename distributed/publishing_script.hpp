// publishing_script.hpp — a Lua script that wakes waiters by publishing on a
// pub/sub channel, in the two forms a deployment needs: classic PUBLISH on
// one server (standalone or found through Sentinel), sharded SPUBLISH on a
// Redis Cluster. The Client decides which (Client::sharded_pub_sub()); its
// Subscriber listens the matching way (SUBSCRIBE or SSUBSCRIBE), so a
// message a script sends always reaches the waiters of that deployment.
//
// How it is written: the source says `redis.pcall(publish, channel, msg)`
// and this class prepends the one line that names the command:
//   local publish = 'publish'      (classic)
//   local publish = 'spublish'     (sharded)
// Two Script objects, each loaded (SCRIPT LOAD) only by the Clients that
// run it; the Lua line numbers in a server's error are one higher than in
// the source given here.
//
// Why sharded on a cluster: a classic PUBLISH is broadcast over the cluster
// bus to every node, so every master pays for every release of every lock
// (distributed/README.md measured 27 -> 40 us of server CPU per acquisition
// at 3 masters). An SPUBLISH stays on the shard that owns the channel's slot.
// Why it is cluster-safe inside a script: Redis checks a script's SPUBLISH
// channel like a key (it must hash to the slot of the script's keys, on
// this node); every channel here is derived_key(name, ...) (lock_keys.hpp),
// which hashes to the lock key's slot by construction.
// Why classic on one server: there both forms cost the same (one node, no
// bus), and PUBLISH works on every Redis version, SPUBLISH only from 7.0.
//
// A deployment must not mix the forms: a SUBSCRIBE hears no SPUBLISH and an
// SSUBSCRIBE no PUBLISH (the waiters would fall back to their lease bound).
// Clients of this library agree by construction (the cluster flag decides);
// a client of another library on the same cluster must publish sharded too.
#pragma once

#include <string>

#include "distributed/client.hpp"
#include "distributed/script.hpp"

namespace locklab::redis {

class PublishingScript {
 public:
  // `body` uses the Lua local `publish` for every wake-up it sends.
  PublishingScript(const std::string& name, const std::string& body)
      : classic_(name, "local publish = 'publish'\n" + body), sharded_(name, "local publish = 'spublish'\n" + body) {}
  PublishingScript(const PublishingScript&) = delete;
  PublishingScript& operator=(const PublishingScript&) = delete;

  // The form `client` publishes with.
  const Script& on(const Client& client) const noexcept { return client.sharded_pub_sub() ? sharded_ : classic_; }

 private:
  Script classic_;
  Script sharded_;
};

}  // namespace locklab::redis
