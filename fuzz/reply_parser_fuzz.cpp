// libFuzzer target: the RESP2/RESP3 reply parser on arbitrary bytes, under three sets of limits
// and with attributes exposed or skipped. Every invariant of tests/redis/reply_invariants.h must
// hold (no call consumes more than it was given, errors are clean and stick, pieces parse as the
// whole, Skip agrees with Parse, each reply parsed writes back and parses to itself); ASan and
// UBSan catch the rest.
//
// Input: byte 0 picks the options (bit 0: expose attributes; bits 1-2: limits), byte 1 seeds how
// the stream is cut into pieces, the rest is the stream.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rankd/redis/reply_parser.h"
#include "reply_invariants.h"

namespace {

rankd::redis::Limits LimitsFor(std::uint8_t options) {
  rankd::redis::Limits limits;
  switch ((options >> 1) & 3) {
    case 1:  // small, so mutated lengths and counts reach them
      limits.max_depth = 6;
      limits.max_elements = 64;
      limits.max_bulk_length = 1024;
      break;
    case 2:  // tiny
      limits.max_depth = 2;
      limits.max_elements = 4;
      limits.max_bulk_length = 16;
      break;
    case 3:  // the deepest the parser allows
      limits.max_depth = rankd::redis::Limits::kMaxDepthCeiling;
      break;
    default:  // the defaults
      break;
  }
  limits.expose_attributes = (options & 1) != 0;
  return limits;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const rankd::redis::Limits limits = LimitsFor(data[0]);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::string violation = rankd::redis::testing::CheckStream(stream, limits, data[1]);
  if (!violation.empty()) {
    std::fprintf(stderr, "reply parser invariant broken: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
