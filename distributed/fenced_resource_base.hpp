// fenced_resource_base.hpp — what every fenced resource of the lab has,
// whatever stores the value: the answer to one write (FenceVerdict), the
// store's totals over every writer (FenceTotals), the check that a token is
// one at all, and the part of the object that is not about the store
// (FencedResourceBase: its name and its own verdict counts). Written once
// for redis::FencedResource (distributed/fenced_resource.hpp: a Redis hash,
// one Lua script a write) and pg::FencedResource (postgres/fenced_resource.hpp:
// a PostgreSQL row, one statement a write), so the two answer, count and
// refuse a non-token the same way. The rule they enforce (strict: a token
// must be above the highest accepted, an equal one is refused too) and why:
// the essay in fencing.hpp.
//
// Header-only and free of any client: postgres/ includes it without taking
// in the Redis client, and it depends on nothing but the standard library.
//
// Costs: nothing sent, ever. The verdict counts are relaxed atomics
// (statistics: they order nothing), one increment per write.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace locklab::redis {

// The resource's answer to one write.
struct FenceVerdict {
  bool accepted = false;
  // The highest token the resource has accepted, after this write (equals
  // the write's token when accepted; when rejected, the one that beat it,
  // 0 if none ever was).
  std::int64_t highest = 0;
};

// The store's counts over every writer, every process (not one object's:
// see FencedResourceBase::accepted()).
struct FenceTotals {
  std::int64_t accepted = 0;
  std::int64_t rejected = 0;
  std::int64_t highest = 0;  // the highest accepted token, 0 if none
};

// std::invalid_argument for a token below 1: INCR never issues one, so it is
// a caller's bug, reported before anything is sent.
inline void check_fencing_token(std::int64_t token) {
  if (token < 1) {
    throw std::invalid_argument("fencing token " + std::to_string(token) +
                                " is not a token: INCR issues 1, 2, 3 ... (nothing was written)");
  }
}

// The name and this object's own verdicts. A resource derives from it,
// passes its type's name for the empty-name error, and hands every verdict
// of its store to counted(). Neither copyable nor movable (the counters are
// atomics that writers on several threads may read).
class FencedResourceBase {
 public:
  using Totals = FenceTotals;

  // This object's own verdicts (relaxed counters: statistics).
  std::uint64_t accepted() const noexcept { return accepted_.load(std::memory_order_relaxed); }
  std::uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  const std::string& name() const noexcept { return name_; }

 protected:
  // std::invalid_argument "<type>: empty name" for an empty name.
  FencedResourceBase(std::string name, const char* type) : name_(std::move(name)) {
    if (name_.empty()) throw std::invalid_argument(std::string(type) + ": empty name");
  }
  ~FencedResourceBase() = default;
  FencedResourceBase(const FencedResourceBase&) = delete;
  FencedResourceBase& operator=(const FencedResourceBase&) = delete;

  // Counts `v` as this object's and returns it.
  FenceVerdict counted(FenceVerdict v) noexcept {
    (v.accepted ? accepted_ : rejected_).fetch_add(1, std::memory_order_relaxed);
    return v;
  }

 private:
  std::string name_;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> rejected_{0};
};

}  // namespace locklab::redis
