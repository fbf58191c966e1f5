// key_slot.hpp — the Redis Cluster hash slot of a key: which of the 16,384
// slots, and so which master, a key lives on.
//
// The rule (the Redis Cluster specification, "Keys distribution model"):
//   slot(key) = CRC16(hashed part of key) mod 16384
// with CRC16 the XMODEM variant (polynomial 0x1021, initial value 0), and
// the hashed part the key's hash tag when it has one (hash_tag in
// lock_keys.hpp: the non-empty text between the first '{' and the first '}'
// after it), else the whole key. So user:{1000}:name and user:{1000}:email
// share a slot, and every key a lock derives from its name shares the
// name's slot (lock_keys.hpp).
//
// Why the client computes it: a cluster-aware client sends each command to
// the master that owns its first key's slot, so it must know the slot
// before it sends (the server would answer MOVED otherwise: a second round
// trip). Cost: one pass over the hashed part, a table-free CRC (8 shifts a
// byte): ~100 ns for a 30-byte key, well under a loopback round trip.
// Tests check it against the server's CLUSTER KEYSLOT.
#pragma once

#include <cstdint>
#include <string_view>

namespace locklab::redis {

// Slots of a Redis Cluster: fixed by the protocol (16,384 = 2^14).
inline constexpr int kClusterSlots = 16384;

// CRC16-XMODEM of `bytes` (the checksum Redis Cluster hashes keys with).
std::uint16_t crc16_xmodem(std::string_view bytes) noexcept;

// The hash slot of `key`, 0..16383, as CLUSTER KEYSLOT computes it.
int key_slot(std::string_view key) noexcept;

}  // namespace locklab::redis
