// CRC16-XMODEM by a 256-entry table computed at compile time, and the hash-tag rule.
#include "rankd/redis/hash_slot.h"

#include <array>

namespace rankd::redis {

namespace {

constexpr std::uint16_t kPolynomial = 0x1021;

constexpr std::array<std::uint16_t, 256> MakeTable() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    std::uint16_t crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ kPolynomial : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<std::uint16_t, 256> kTable = MakeTable();

}  // namespace

std::uint16_t Crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    const unsigned index = ((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff;
    crc = static_cast<std::uint16_t>((crc << 8) ^ kTable[index]);
  }
  return crc;
}

std::string_view HashTag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t HashSlot(std::string_view key) {
  return static_cast<std::uint16_t>(Crc16(HashTag(key)) & (kClusterSlots - 1));
}

}  // namespace rankd::redis
