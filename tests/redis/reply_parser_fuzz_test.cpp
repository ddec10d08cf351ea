// Randomized tests of the parser: random valid replies written as a server would write them
// parse back to themselves however the stream is cut; random mutations of such streams and
// random bytes never crash, hang or over-allocate, and keep every invariant of
// reply_invariants.h (the checks the fuzz target makes too).
// Seeds are fixed so a failure reproduces; the failing seed is printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"
#include "reply_invariants.h"
#include "resp_test_util.h"

namespace rankd::redis {
namespace {

using Rng = std::mt19937_64;

std::size_t Uniform(Rng& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }

std::string RandomBytes(Rng& rng, std::size_t max_size, bool line_safe) {
  static constexpr char kAlphabet[] = "ab\r\n\0{}:$*-+ 0123456789";
  std::string s(Uniform(rng, max_size + 1), '\0');
  for (char& c : s) {
    c = Uniform(rng, 2) == 0 ? kAlphabet[Uniform(rng, sizeof(kAlphabet) - 1)]
                             : static_cast<char>(Uniform(rng, 256));
    if (line_safe && (c == '\r' || c == '\n')) c = '_';
  }
  return s;
}

std::string RandomDigits(Rng& rng) {
  std::string s = Uniform(rng, 3) == 0 ? "-" : "";
  s += static_cast<char>('1' + Uniform(rng, 9));
  for (std::size_t n = Uniform(rng, 40); n > 0; --n) s += static_cast<char>('0' + Uniform(rng, 10));
  return s;
}

double RandomDouble(Rng& rng) {
  switch (Uniform(rng, 6)) {
    case 0:
      return std::numeric_limits<double>::infinity() * (Uniform(rng, 2) ? 1 : -1);
    case 1:
      return std::nan("");
    case 2:
      return static_cast<double>(static_cast<std::int64_t>(rng() % 2001) - 1000) / 8;
    default: {  // any finite bit pattern, subnormals included
      double d;
      do {
        const std::uint64_t bits = rng();
        std::memcpy(&d, &bits, sizeof(d));
      } while (!std::isfinite(d));
      return d;
    }
  }
}

Reply RandomReply(Rng& rng, int depth, bool resp2, bool attributes) {
  // Kinds 0-8 are scalars, 9-13 aggregates; RESP2 has kinds 0-4 and 9 (arrays).
  const std::size_t kinds = resp2 ? 6 : 14;
  const std::size_t pick = Uniform(rng, depth >= 4 ? (resp2 ? 5 : 9) : kinds);
  const std::size_t kind = resp2 && pick == 5 ? 9 : pick;
  Reply r;
  switch (kind) {
    case 0:
      r = Reply::Simple(RandomBytes(rng, 12, true));
      break;
    case 1:
      r = Reply::Error(RandomBytes(rng, 12, true));
      break;
    case 2:
      r = Reply::Integer(static_cast<std::int64_t>(rng()) >> Uniform(rng, 64));
      break;
    case 3:
      r = Reply::Bulk(RandomBytes(rng, Uniform(rng, 10) == 0 ? 300 : 12, false));
      break;
    case 4:
      r = Reply::Null();
      break;
    case 5:
      r.type = Type::kDouble;
      r.number = RandomDouble(rng);
      break;
    case 6:
      r.type = Type::kBoolean;
      r.boolean = Uniform(rng, 2) == 1;
      break;
    case 7:
      r = Reply::Text(Type::kBigNumber, RandomDigits(rng));
      break;
    case 8:
      r = Reply::Text(Type::kVerbatim, RandomBytes(rng, 12, false));
      r.format = Uniform(rng, 2) ? "txt" : "mkd";
      break;
    default: {
      static constexpr Type kAggregates[] = {Type::kArray, Type::kMap, Type::kSet, Type::kPush,
                                             Type::kArray};
      r.type = kAggregates[kind - 9];
      std::size_t n = Uniform(rng, 6);
      if (r.type == Type::kMap) n *= 2;
      for (std::size_t i = 0; i < n; ++i) {
        r.elements.push_back(RandomReply(rng, depth + 1, resp2, attributes));
      }
      break;
    }
  }
  if (attributes && !resp2 && Uniform(rng, 8) == 0) {
    for (std::size_t n = 1 + Uniform(rng, 2); n > 0; --n) {
      r.attributes.push_back(Reply::Simple(RandomBytes(rng, 6, true)));
      r.attributes.push_back(Reply::Integer(static_cast<std::int64_t>(Uniform(rng, 100))));
    }
  }
  return r;
}

void StripAttributes(Reply& r) {
  r.attributes.clear();
  for (Reply& e : r.elements) StripAttributes(e);
}

// The replies of a stream fed to one parser in random pieces (no pieces: whole), rendered,
// with the invariants of reply_invariants.h checked on every call.
std::vector<std::string> Rendered(const std::string& stream, Limits limits, std::uint64_t seed,
                                  bool in_pieces) {
  std::string violation;
  testing::PieceSizes pieces(seed);
  const testing::StreamOutcome out =
      testing::FeedStream(stream, limits, in_pieces ? &pieces : nullptr, false, &violation);
  EXPECT_EQ(violation, "");
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.consumed, stream.size());
  std::vector<std::string> rendered;
  for (const Reply& r : out.replies) rendered.push_back(r.DebugString());
  return rendered;
}

TEST(ReplyParserFuzz, RandomRepliesRoundTripInRandomPieces) {
  for (std::uint64_t seed = 1; seed <= 5000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed);
    const bool resp2 = seed % 3 == 0;
    std::vector<Reply> replies;
    std::string stream;
    for (std::size_t n = 1 + Uniform(rng, 5); n > 0; --n) {
      replies.push_back(RandomReply(rng, 1, resp2, /*attributes=*/true));
      testing::WriteReply(replies.back(), stream, resp2);
    }
    Limits exposed;
    exposed.expose_attributes = true;
    std::vector<std::string> expected;
    for (const Reply& r : replies) expected.push_back(r.DebugString());
    ASSERT_EQ(Rendered(stream, exposed, seed, false), expected);
    ASSERT_EQ(Rendered(stream, exposed, seed, true), expected);
    ASSERT_EQ(testing::CheckStream(stream, exposed, seed), "");

    std::vector<std::string> skipped;
    for (Reply r : replies) {
      StripAttributes(r);
      skipped.push_back(r.DebugString());
    }
    ASSERT_EQ(Rendered(stream, Limits{}, seed, true), skipped);
    ASSERT_EQ(testing::CheckStream(stream, Limits{}, seed), "");
  }
}

std::string Mutate(std::string s, Rng& rng) {
  static constexpr char kSpecial[] = "\r\n*$:-+_,#(!=%~|>?0123456789";
  for (std::size_t n = 1 + Uniform(rng, 4); n > 0; --n) {
    const std::size_t at = s.empty() ? 0 : Uniform(rng, s.size());
    const char c = Uniform(rng, 2) ? kSpecial[Uniform(rng, sizeof(kSpecial) - 1)]
                                   : static_cast<char>(Uniform(rng, 256));
    switch (Uniform(rng, 5)) {
      case 0:
      case 1:
        if (!s.empty()) s[at] = c;
        break;
      case 2:
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
        break;
      case 3:
        if (!s.empty()) s.erase(at, 1 + Uniform(rng, 3));
        break;
      default:
        s.resize(at);  // truncated
        break;
    }
  }
  return s;
}

TEST(ReplyParserFuzz, MutatedStreamsFailCleanlyAndTheSameWayInPieces) {
  Limits small;  // small limits so mutated lengths and counts hit them often
  small.max_depth = 6;
  small.max_elements = 64;
  small.max_bulk_length = 1024;
  std::size_t errors = 0;
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng(seed * 7919);
    std::string stream;
    for (std::size_t n = 1 + Uniform(rng, 4); n > 0; --n) {
      testing::WriteReply(RandomReply(rng, 1, seed % 3 == 0, true), stream, seed % 3 == 0);
    }
    const std::string mutated = Mutate(stream, rng);
    // Clean errors, the same in pieces, Skip agreeing with Parse, replies that write back.
    ASSERT_EQ(testing::CheckStream(mutated, small, seed), "");
    std::string violation;
    if (!testing::FeedStream(mutated, small, nullptr, false, &violation).error.empty()) ++errors;
  }
  EXPECT_GT(errors, 5000u);  // the mutations do produce malformed input
}

TEST(ReplyParserFuzz, RandomBytesNeverCrash) {
  Rng rng(12345);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(Uniform(rng, 40), '\0');
    static constexpr char kSpecial[] = "\r\n*$:-+_,#(!=%~|>0123456789";
    for (char& c : bytes) {
      c = Uniform(rng, 4) ? kSpecial[Uniform(rng, sizeof(kSpecial) - 1)]
                          : static_cast<char>(Uniform(rng, 256));
    }
    ASSERT_EQ(testing::CheckStream(bytes, Limits{}, static_cast<std::uint64_t>(i)), "")
        << testing::Written(Reply::Bulk(bytes));
  }
}

}  // namespace
}  // namespace rankd::redis
