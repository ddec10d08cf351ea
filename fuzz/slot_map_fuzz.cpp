// libFuzzer target: SlotMap::FromClusterShards and SlotMap::FromClusterSlots on replies read from
// fuzz bytes, then MOVED updates and SplitByNode on what they built. Errors must name their
// reply; every map built must keep the invariants of tests/redis/slot_map_invariants.h, before
// and after the MOVED; ASan and UBSan catch the rest.
//
// Input: byte 0 picks the options (bit 0: RESP3-style attribute exposure for the reader), then
// one RESP reply (the topology), then key material: up to 64 keys separated by '\n', the first
// two bytes of which also give a MOVED slot and port.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"
#include "rankd/redis/slot_map.h"
#include "slot_map_invariants.h"

namespace {

using rankd::redis::SlotMap;

[[noreturn]] void Broken(std::string_view what, const std::string& detail) {
  std::fprintf(stderr, "slot map invariant broken: %.*s: %s\n", static_cast<int>(what.size()),
               what.data(), detail.c_str());
  std::abort();
}

void Exercise(std::string_view what, const std::expected<SlotMap, std::string>& built,
              std::string_view prefix, std::string_view rest) {
  if (!built.has_value()) {
    if (built.error().rfind(prefix, 0) != 0)
      Broken(what, "error without its place: " + built.error());
    return;
  }
  SlotMap map = *built;
  if (const std::string broken = rankd::redis::testing::CheckSlotMap(map); !broken.empty()) {
    Broken(what, broken);
  }
  std::vector<std::string_view> keys;
  for (std::size_t start = 0; start <= rest.size() && keys.size() < 64;) {
    const std::size_t end = std::min(rest.find('\n', start), rest.size());
    keys.push_back(rest.substr(start, end - start));
    start = end + 1;
  }
  if (const std::string broken =
          rankd::redis::testing::CheckSplit(map, keys, rankd::redis::SplitByNode(map, keys));
      !broken.empty()) {
    Broken(what, "split: " + broken);
  }
  if (rest.size() >= 2) {
    const auto slot = static_cast<std::uint16_t>(
        (static_cast<unsigned char>(rest[0]) << 8 | static_cast<unsigned char>(rest[1])) & 0x3fff);
    const auto port = static_cast<std::uint16_t>(1 + static_cast<unsigned char>(rest[1]) % 8);
    const int node = map.ApplyMoved(slot, "127.0.0.1", port);
    if (node < 0 || map.PrimaryFor(slot) != node || !map.ReplicasFor(slot).empty() ||
        map.FindNode("127.0.0.1", port) != node) {
      Broken(what, "MOVED not applied");
    }
    if (const std::string broken = rankd::redis::testing::CheckSlotMap(map); !broken.empty()) {
      Broken(what, "after MOVED: " + broken);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  rankd::redis::Limits limits;
  limits.expose_attributes = (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  rankd::redis::ReplyParser parser(limits);
  rankd::redis::ReplyBuilder builder;
  std::size_t consumed = 0;
  if (parser.Parse(input, builder, &consumed) != rankd::redis::ParseStatus::kComplete) return 0;
  const rankd::redis::Reply reply = builder.Take();
  const std::string_view rest = input.substr(consumed);
  Exercise("CLUSTER SHARDS", SlotMap::FromClusterShards(reply), "CLUSTER SHARDS: ", rest);
  Exercise("CLUSTER SLOTS", SlotMap::FromClusterSlots(reply), "CLUSTER SLOTS: ", rest);
  return 0;
}
