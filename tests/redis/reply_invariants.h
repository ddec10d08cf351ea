// What must hold whatever bytes a peer sends the reply parser, checked the same way by the
// randomized tests (GoogleTest) and the fuzz target (libFuzzer): CheckStream() returns "" when
// every invariant holds, else a description of the first one broken.
//
//   - Parse() consumes nothing unless it completes a reply, a complete reply has bytes, and
//     no call consumes more than it was given; the parser's offset() counts what was consumed.
//   - An error is "RESP: ..." at an offset inside the bytes given, and sticks: later calls
//     report the same error.
//   - AtEndOfStream() is true exactly when no reply is left half received.
//   - Fed in pieces the stream parses exactly as when fed whole; Skip() consumes the same
//     replies, the same number of bytes each, and fails the same way.
//   - Every reply parsed, written back as RESP, parses back to itself with the same limits.
//
// Header-only; no thread affinity (plain functions on their arguments).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"
#include "resp_test_util.h"

namespace rankd::redis::testing {

// How one parser got through a stream.
struct StreamOutcome {
  std::vector<Reply> replies;
  std::vector<std::size_t> sizes;  // bytes of each reply
  std::size_t consumed = 0;
  std::string error;  // the parse error's message, "" if none
  std::uint64_t error_offset = 0;
  bool at_end = false;  // AtEndOfStream() after the last byte
  bool operator==(const StreamOutcome&) const = default;
};

// Piece sizes for feeding a stream: splitmix64 of a seed, so a seed reproduces a cut.
class PieceSizes {
 public:
  explicit PieceSizes(std::uint64_t seed) : state_(seed) {}
  // 1 to min(left, 64) bytes.
  std::size_t Next(std::size_t left) {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return 1 + static_cast<std::size_t>(z % std::min<std::size_t>(left, 64));
  }

 private:
  std::uint64_t state_;
};

// Feeds `stream` to one parser, whole (pieces == nullptr) or in pieces, with Parse() into a
// ReplyBuilder or (skip) with Skip(). Broken call-level invariants go to *violation.
inline StreamOutcome FeedStream(std::string_view stream, Limits limits, PieceSizes* pieces,
                                bool skip, std::string* violation) {
  StreamOutcome out;
  ReplyParser parser(limits);
  std::string buffer;
  std::size_t fed = 0;
  auto broken = [&](const std::string& what) {
    if (violation->empty()) *violation = what + " (at stream byte " + std::to_string(fed) + ")";
  };
  while (fed < stream.size() && out.error.empty()) {
    const std::size_t left = stream.size() - fed;
    const std::size_t n = pieces == nullptr ? left : pieces->Next(left);
    buffer.append(stream.substr(fed, n));
    fed += n;
    for (;;) {
      ReplyBuilder builder;
      std::size_t consumed = 12345;  // must be overwritten
      const ParseStatus status =
          skip ? parser.Skip(buffer, &consumed) : parser.Parse(buffer, builder, &consumed);
      if (consumed > buffer.size()) broken("consumed more than the buffer holds");
      if (status != ParseStatus::kComplete && consumed != 0) {
        broken("consumed bytes without completing a reply");
      }
      if (status == ParseStatus::kError) {
        out.error = parser.error().message;
        out.error_offset = parser.error().offset;
        if (out.error.rfind("RESP: ", 0) != 0)
          broken("error without the RESP prefix: " + out.error);
        if (out.error_offset < out.consumed || out.error_offset > fed) {
          broken("error offset " + std::to_string(out.error_offset) + " outside the unconsumed " +
                 std::to_string(out.consumed) + "-" + std::to_string(fed));
        }
        if (!parser.failed()) broken("failed() false after an error");
        std::size_t again = 1;
        if (parser.Parse(buffer, builder, &again) != ParseStatus::kError || again != 0 ||
            parser.error().message != out.error) {
          broken("the error did not stick");
        }
        break;
      }
      if (status == ParseStatus::kNeedMore) break;
      if (consumed == 0) {
        broken("a complete reply of 0 bytes");
        out.error = "consumed nothing";
        break;
      }
      if (!skip) {
        if (!builder.done()) broken("the sink was not given a whole reply");
        out.replies.push_back(builder.Take());
      }
      out.sizes.push_back(consumed);
      out.consumed += consumed;
      buffer.erase(0, consumed);
      if (parser.offset() != out.consumed) broken("offset() is not the bytes consumed");
    }
  }
  out.at_end = parser.AtEndOfStream(buffer.size());
  if (out.error.empty() && out.at_end != buffer.empty()) {
    broken("AtEndOfStream disagrees with the " + std::to_string(buffer.size()) +
           " bytes left over");
  }
  return out;
}

// Checks every invariant above for `stream`; "" when they all hold.
inline std::string CheckStream(std::string_view stream, Limits limits, std::uint64_t piece_seed) {
  std::string violation;
  const StreamOutcome whole = FeedStream(stream, limits, nullptr, false, &violation);
  if (!violation.empty()) return "whole: " + violation;
  PieceSizes pieces(piece_seed);
  const StreamOutcome in_pieces = FeedStream(stream, limits, &pieces, false, &violation);
  if (!violation.empty()) return "in pieces: " + violation;
  if (!(in_pieces == whole)) return "parsed differently in pieces than whole";
  PieceSizes skip_pieces(piece_seed + 1);
  const StreamOutcome skipped = FeedStream(stream, limits, &skip_pieces, true, &violation);
  if (!violation.empty()) return "skip: " + violation;
  if (skipped.sizes != whole.sizes || skipped.error != whole.error ||
      skipped.error_offset != whole.error_offset) {
    return "Skip() consumed differently from Parse()";
  }
  for (std::size_t i = 0; i < whole.replies.size(); ++i) {
    const Reply& reply = whole.replies[i];
    const std::string written = Written(reply);
    const Parsed again = ParseAll(written, limits);
    if (again.error || again.replies.size() != 1 || again.consumed != written.size() ||
        !(again.replies[0] == reply)) {
      return "reply " + std::to_string(i) + " " + reply.DebugString() +
             " does not parse back from " + Written(Reply::Bulk(written)) + ": " +
             (again.error             ? again.message
              : again.replies.empty() ? "no reply"
                                      : again.replies[0].DebugString());
    }
  }
  return "";
}

}  // namespace rankd::redis::testing
