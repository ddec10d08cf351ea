// Redis Cluster key slots: CRC16-XMODEM of the key (or of its hash tag) modulo 16384.
//
// Hash tag rule, as Redis defines it: if the key contains '{', and a '}' follows it, and at
// least one byte lies between the first '{' and the first '}' after it, only those bytes are
// hashed; otherwise the whole key is. So "{user1000}.following" and "{user1000}.followers"
// share a slot, "foo{}{bar}" hashes the whole key, and "foo{{bar}}zap" hashes "{bar".
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace rankd::redis {

inline constexpr std::uint16_t kClusterSlots = 16384;

// CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor).
std::uint16_t Crc16(std::string_view bytes);

// The part of `key` that is hashed: its hash tag if it has one, else the whole key.
std::string_view HashTag(std::string_view key);

std::uint16_t HashSlot(std::string_view key);

}  // namespace rankd::redis
