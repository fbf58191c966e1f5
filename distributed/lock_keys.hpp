// lock_keys.hpp — the names of every key and channel a Redis lock uses
// besides its own key, and the check every lock name passes.
//
// The guarantee: for any two valid lock names N and M (check_lock_name) and
// any roles r and s,
//   - derived_key(N, r) is never a valid lock name: no lock's key is
//     another lock's counter, queue, channel ...;
//   - derived_key(N, r) == derived_key(M, s) only if N == M and r == s: two
//     locks never share a derived key or channel;
//   - derived_key(N, r) hashes to the Redis Cluster slot of the key N, so
//     one script may name all of a lock's keys on a cluster (and a sharded
//     SSUBSCRIBE channel lands on the lock's node too).
// Costs: string building only, no round trip.
//
// Why a scheme at all
// -------------------
// Appending a suffix (`<name>:fence`, `<name>:queue` ...) shares the
// user's namespace: a lock named `x:fence` IS lock x's token counter, so
// one of the two fails (x's INCR finds an owner string: ERR not an
// integer) or blocks the other (the counter's "1" looks like a holder).
// And `<name>:fence` hashes apart from `<name>` on a cluster unless the
// user remembered a {hash tag}, so the scripts that touch both would be
// refused (CROSSSLOT).
//
// The scheme
// ----------
// One character is reserved, kDerivedKeyMarker '~': no lock name contains
// it. A derived key is the name, marked, then the role:
//   name with a hash tag    N + "~" + role          {user1}:cart~fence
//   name without one        "~{" + N + "}~" + role  ~{orders}~fence
// (Redis Cluster's hash tag: the text between the first '{' of a key and
// the first '}' after it, if that text is not empty; a key without one is
// hashed whole.) Roles in use: "fence" (every lock type, fencing.hpp),
// "channel" (PubSubLock, AdaptiveLock, PermitSemaphore: a pub/sub channel,
// not a key), "queue", "alive:<owner>" and "wake:<owner>" (FairLock),
// "timeout" (PermitSemaphore). A role may be any text.
//
// Why it is injective. (1) Every derived key contains '~' and no lock name
// does, so no lock name equals a derived key. (2) A derived key gives back
// its name and role: if it starts with '~' it has the second form (a name
// cannot start with '~'), and N is the text between the '{' at index 1 and
// the first '}' (such an N contains no '}', see below), the role what
// follows "}~"; otherwise it has the first form, N is the text before the
// first '~' (N contains none) and the role what follows it. So two derived
// keys are equal only if their names and roles are.
//
// Why it keeps one slot. A name with a non-empty tag keeps it: the first
// '{' of N + "~" + role is N's, and the '}' closing N's tag comes before
// the appended text. A name without one is hashed whole by Redis; its
// derived keys carry N itself as their tag: the first '{' is the one at
// index 1 ('~' is no brace) and the first '}' after it is the one after N,
// provided N contains no '}'. A name without a non-empty tag that contains
// a '}' (`a}b`, `x{}y`: the empty tag `{}` counts as none) is therefore
// refused: Redis hashes it whole, a tag can never contain '}', so no
// derived key could hash like it. Use a non-empty tag (`{a}b`) or no '}'.
//
// What it does not cover: keys that other code writes. A user key that
// happens to spell `~{x}~fence` is a foreign value in lock x's counter.
// Then an acquire fails with redis::Error(kServer) (WRONGTYPE, or "not an
// integer") and takes nothing: Redis does not roll back a script that
// fails, so every script that writes the lock key runs the one write a
// foreign value can fail, the counter's INCR, before it (fencing.cpp,
// pub_sub_lock.cpp, fair_lock.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace locklab::redis {

// The character no lock name may contain; every derived key contains it.
inline constexpr char kDerivedKeyMarker = '~';

// Redis Cluster's hash tag of `key`: the non-empty text between the first
// '{' and the first '}' after it, or nullopt (the whole key is hashed).
std::optional<std::string_view> hash_tag(std::string_view key);

// Throws std::invalid_argument "<who>: ..." for an empty name, a name that
// contains kDerivedKeyMarker, and a name that contains '}' but no non-empty
// hash tag (essay). Every lock's constructor calls it.
void check_lock_name(std::string_view who, std::string_view name);

// The key (or channel) of `role` for the lock `name` (essay): "N~role" or
// "~{N}~role". Throws std::invalid_argument as check_lock_name.
std::string derived_key(std::string_view name, std::string_view role);

// What every derived key of `name` starts with: derived_key(name, role) ==
// derived_key_prefix(name) + role. For scripts that build per-waiter keys
// themselves. Throws std::invalid_argument as check_lock_name.
std::string derived_key_prefix(std::string_view name);

}  // namespace locklab::redis
