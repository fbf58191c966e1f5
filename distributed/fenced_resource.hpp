// fenced_resource.hpp — the resource side of fencing tokens: a value that
// accepts a write only if its token is above the highest it has accepted
// (FencedResource, in Redis, one Lua script per write) and the same rule in
// process memory (LocalFencedResource). Why, the protocol, the strict rule
// (an equal token is rejected too) and what INCR does not protect against:
// the essay in fencing.hpp. Tokens come from any lock built with
// Options::fenced (token()) or from FencingTokens. The verdict, the totals,
// the token check and the name and counts of a resource object are shared
// with pg::FencedResource: fenced_resource_base.hpp.
//
// Costs: FencedResource::write, read and totals 1 round trip each;
// LocalFencedResource one mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "distributed/client.hpp"
#include "distributed/fenced_resource_base.hpp"

namespace locklab::redis {

// A value in Redis guarded by fencing tokens: the hash <name> with fields
// `value`, `token` (highest accepted), `accepted` and `rejected` (totals
// over every writer, every process). The check and the write are one Lua
// script, so no interleaving of writers can slip a stale write past it.
// Its name, accepted(), rejected() (this object's own verdicts) and Totals:
// FencedResourceBase.
class FencedResource : public FencedResourceBase {
 public:
  // Binds to the hash `name` on `client`. Sends nothing.
  // std::invalid_argument for an empty name.
  FencedResource(Client& client, std::string name);

  // Writes `value` if `token` > the highest accepted token, atomically.
  // std::invalid_argument if token < 1 (INCR never issues one: a caller
  // bug, nothing is sent). redis::Error if Redis fails (then this object's
  // counters are unchanged; the write may or may not have happened, see
  // client.hpp). Error(kServer) WRONGTYPE if `name` holds another type.
  FenceVerdict write(std::int64_t token, const std::string& value);
  // The current value, nullopt if never written. One round trip.
  std::optional<std::string> read();
  // Server-side totals over all writers. One round trip.
  Totals totals();

 private:
  Client& client_;
};

// The same rule in process memory, for local demos and tests of code that
// takes a resource: a mutex around (value, highest token, counts). Thread-
// safe; no Redis.
class LocalFencedResource {
 public:
  // As FencedResource::write (std::invalid_argument for token < 1).
  FenceVerdict write(std::int64_t token, const std::string& value);
  std::optional<std::string> read() const;
  std::int64_t highest() const;
  std::uint64_t accepted() const;
  std::uint64_t rejected() const;

 private:
  mutable std::mutex mu_;
  std::optional<std::string> value_;
  std::int64_t highest_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t rejected_ = 0;
};

}  // namespace locklab::redis
