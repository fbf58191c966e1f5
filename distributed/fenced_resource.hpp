// fenced_resource.hpp — the resource side of fencing tokens: a value that
// accepts a write only if its token is above the highest it has accepted
// (FencedResource, in Redis, one Lua script per write) and the same rule in
// process memory (LocalFencedResource). Why, the protocol, the strict rule
// (an equal token is rejected too) and what INCR does not protect against:
// the essay in fencing.hpp. Tokens come from any lock built with
// Options::fenced (token()) or from FencingTokens.
//
// Costs: FencedResource::write, read and totals 1 round trip each;
// LocalFencedResource one mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "distributed/client.hpp"

namespace locklab::redis {

// The resource's answer to one write.
struct FenceVerdict {
  bool accepted = false;
  // The highest token the resource has accepted, after this write (equals
  // the write's token when accepted; when rejected, the one that beat it,
  // 0 if none ever was).
  std::int64_t highest = 0;
};

// A value in Redis guarded by fencing tokens: the hash <name> with fields
// `value`, `token` (highest accepted), `accepted` and `rejected` (totals
// over every writer, every process). The check and the write are one Lua
// script, so no interleaving of writers can slip a stale write past it.
class FencedResource {
 public:
  struct Totals {
    std::int64_t accepted = 0;
    std::int64_t rejected = 0;
    std::int64_t highest = 0;
  };

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

  // This object's own verdicts (relaxed counters: statistics).
  std::uint64_t accepted() const noexcept { return accepted_.load(std::memory_order_relaxed); }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  const std::string& name() const noexcept { return name_; }

 private:
  Client& client_;
  std::string name_;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> rejected_{0};
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
