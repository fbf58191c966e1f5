// cluster_error.hpp — the two errors only a Redis Cluster gives, as types
// of their own so a caller can tell them from any other server error.
//
// Both are redis::Error of kind kServer: the server answered, and the
// command did not run (a CROSSSLOT or MOVED/ASK reply is sent instead of
// running it), so the outcome is known (lock_support.hpp's outcome_unknown
// is false): nothing to restore.
//
//   CrossSlot          the keys of one command (a multi-key command, a
//                      script's KEYS) hash to more than one slot. The
//                      message names every key with its slot. Not retried:
//                      the same keys would be refused again. Our locks never
//                      cause it (lock_keys.hpp puts a lock's keys in one
//                      slot by construction); a user's own MGET can.
//   TooManyRedirects   the client followed kMaxRedirects MOVED / ASK /
//                      TRYAGAIN answers for one command and was still sent
//                      on (a cluster reshuffling faster than the client can
//                      follow, or nodes that disagree about a slot). The
//                      message lists the hops.
#pragma once

#include <string>
#include <vector>

#include "distributed/error.hpp"

namespace locklab::redis {

class CrossSlot : public Error {
 public:
  CrossSlot(const std::string& message, std::vector<std::string> keys, std::vector<int> slots)
      : Error(Kind::kServer, message), keys_(std::move(keys)), slots_(std::move(slots)) {}
  // The command's keys and their slots (same order).
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  const std::vector<int>& slots() const noexcept { return slots_; }

 private:
  std::vector<std::string> keys_;
  std::vector<int> slots_;
};

class TooManyRedirects : public Error {
 public:
  TooManyRedirects(const std::string& message, std::vector<std::string> hops)
      : Error(Kind::kServer, message), hops_(std::move(hops)) {}
  // Each redirect as the server sent it ("MOVED 3999 127.0.0.1:7001").
  const std::vector<std::string>& hops() const noexcept { return hops_; }

 private:
  std::vector<std::string> hops_;
};

}  // namespace locklab::redis
