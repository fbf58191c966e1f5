// key_slot: the slot rule every routed command and every lock name relies
// on, checked against values the Redis Cluster specification publishes and
// against the hash-tag rule. (cluster_router_test.cpp checks it against a
// live server's CLUSTER KEYSLOT as well.)
#include "distributed/key_slot.hpp"

#include <gtest/gtest.h>

#include <string>

#include "distributed/lock_keys.hpp"

namespace locklab::redis {
namespace {

TEST(KeySlotTest, Crc16IsTheXmodemVariantOfTheSpecification) {
  // The specification's reference check value: CRC16("123456789") = 0x31C3.
  EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);
  EXPECT_EQ(crc16_xmodem(""), 0);
}

TEST(KeySlotTest, SlotsAreInRangeAndFollowTheHashTagRule) {
  EXPECT_EQ(key_slot("123456789"), 0x31C3 % kClusterSlots);
  // The specification's example: both keys hash "user1000".
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  // An empty tag counts as none: the whole key is hashed.
  EXPECT_EQ(key_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % kClusterSlots);
  // Only the first tag counts.
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
  for (const std::string key : {"a", "b", "orders", "locklab:test:x", "\xff\x00 binary"}) {
    EXPECT_GE(key_slot(key), 0);
    EXPECT_LT(key_slot(key), kClusterSlots);
  }
}

// What lets every lock run on a cluster: a name and every key derived from
// it share a slot, for names whose plain suffixed keys would not.
TEST(KeySlotTest, EveryDerivedKeySharesItsLockNamesSlot) {
  int apart = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string name = "order-" + std::to_string(i);
    if (key_slot(name) != key_slot(name + ":fence")) ++apart;
    for (const char* role : {"fence", "queue", "timeout", "channel", "alive:abc:1", "wake:abc:1"}) {
      EXPECT_EQ(key_slot(derived_key(name, role)), key_slot(name)) << name << " " << role;
      EXPECT_EQ(key_slot(derived_key("{t}" + name, role)), key_slot("{t}" + name)) << name << " " << role;
    }
  }
  EXPECT_GT(apart, 40) << "the names chosen do not show the point: their suffixed keys share slots anyway";
}

}  // namespace
}  // namespace locklab::redis
