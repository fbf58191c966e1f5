// fencing_token_members.hpp — the fencing half of a Redis lock's public
// surface (token(), fenced(), fence_key()) and its name(), written once for
// every lock that takes Options::fenced. A CRTP base with no state of its
// own: it reads the lock's fields, so the lock keeps its constructor and
// its data where its essay describes them.
//
// What Derived must provide (private, with `friend FencingTokenMembers<D>;`)
// ---------------------------------------------------------------------------
//   Client& client_               the lock's Client (thread_owner() names
//                                 the calling thread)
//   std::string name_             the lock's key
//   std::string fence_key_        its token counter, FencingTokens::key_for(name_)
//   options_.fenced               bool: whether acquisitions take tokens
//   detail::LocalHolds tokens_    owner -> token of its current hold (0: none),
//                                 set by the acquire, cleared by the release
//
// What the members mean
// ---------------------
//   token()      the fencing token of the calling thread's hold (for a
//                reentrant lock, of its outermost hold): no round trip.
//                std::logic_error if the lock was not built with
//                Options::fenced; std::system_error(operation_not_permitted)
//                if this thread does not hold the lock (per the lock
//                object's record). It keeps answering until unlock(), even
//                after the lease ran out: the resource decides (fencing.hpp).
//   fenced()     Options::fenced.
//   fence_key()  the token counter key (used only if fenced).
//   name()       the lock's key.
#pragma once

#include <cstdint>
#include <string>

#include "distributed/fenced_acquire.hpp"

namespace locklab::redis {

template <class Derived>
class FencingTokenMembers {
 public:
  std::int64_t token() const {
    const Derived& d = self();
    return detail::held_token(d.tokens_, d.options_.fenced, d.name_, d.client_.thread_owner());
  }
  bool fenced() const noexcept { return self().options_.fenced; }
  const std::string& fence_key() const noexcept { return self().fence_key_; }
  const std::string& name() const noexcept { return self().name_; }

 protected:
  FencingTokenMembers() = default;
  ~FencingTokenMembers() = default;

 private:
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

}  // namespace locklab::redis
