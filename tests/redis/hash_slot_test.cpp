// CRC16-XMODEM and cluster key slots, against published check values and Redis's hash tag rules.
#include "rankd/redis/hash_slot.h"

#include <gtest/gtest.h>

#include <string>

namespace rankd::redis {
namespace {

TEST(HashSlot, Crc16XmodemCheckValue) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // the CRC catalogue's check value for XMODEM
  EXPECT_EQ(Crc16(""), 0);
  EXPECT_EQ(Crc16(std::string("\0", 1)), 0);
  EXPECT_EQ(Crc16("A"), 0x58E5);
}

TEST(HashSlot, KnownSlots) {
  EXPECT_EQ(HashSlot("123456789"), 12739);  // 0x31C3 % 16384
  // Values Redis reports for CLUSTER KEYSLOT.
  EXPECT_EQ(HashSlot("foo"), 12182);
  EXPECT_EQ(HashSlot("bar"), 5061);
  EXPECT_EQ(HashSlot("somekey"), 11058);
  EXPECT_EQ(HashSlot(""), 0);
}

TEST(HashSlot, HashTags) {
  EXPECT_EQ(HashSlot("{user1000}.following"), HashSlot("{user1000}.followers"));
  EXPECT_EQ(HashSlot("{user1000}.following"), HashSlot("user1000"));
  EXPECT_EQ(HashTag("{user1000}.following"), "user1000");
  EXPECT_EQ(HashTag("foo{}{bar}"), "foo{}{bar}");  // empty first tag: the whole key
  EXPECT_EQ(HashTag("foo{{bar}}zap"), "{bar");     // from the first '{' to the first '}'
  EXPECT_EQ(HashSlot("foo{{bar}}zap"), HashSlot("{bar"));
  EXPECT_EQ(HashTag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(HashTag("foo{bar"), "foo{bar");  // no closing brace
  EXPECT_EQ(HashTag("foo}bar{"), "foo}bar{");
  EXPECT_EQ(HashTag("}{x}"), "x");
  EXPECT_EQ(HashTag(std::string("{\0}", 3)), std::string("\0", 1));
}

}  // namespace
}  // namespace rankd::redis
