// Randomized tests of the parser: random valid replies written as a server would write them
// parse back to themselves however the stream is cut; random mutations of such streams and
// random bytes never crash, hang or over-allocate, and parse the same way whole or in pieces.
// Seeds are fixed so a failure reproduces; the failing seed is printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"
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

// The outcome of parsing a stream: the replies (rendered) and how it ended.
struct Outcome {
  std::vector<std::string> replies;
  std::size_t consumed = 0;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

void PrintTo(const Outcome& o, std::ostream* os) {
  *os << o.replies.size() << " replies, " << o.consumed << " bytes consumed, error '" << o.error
      << "'";
  for (const std::string& r : o.replies) *os << "\n  " << r;
}

// Feeds `stream` to one parser in random chunks (one chunk: the whole stream at once).
Outcome Feed(const std::string& stream, Limits limits, Rng* chunker) {
  Outcome out;
  ReplyParser parser(limits);
  std::string buffer;
  std::size_t fed = 0;
  while (fed < stream.size()) {
    const std::size_t left = stream.size() - fed;
    const std::size_t n =
        chunker == nullptr ? left : 1 + Uniform(*chunker, std::min<std::size_t>(64, left));
    buffer.append(stream, fed, n);
    fed += n;
    for (;;) {
      ReplyBuilder builder;
      std::size_t consumed = 0;
      const ParseStatus status = parser.Parse(buffer, builder, &consumed);
      if (status == ParseStatus::kError) {
        out.error = parser.error().message;
        return out;
      }
      if (status == ParseStatus::kNeedMore) break;
      if (consumed == 0) {  // a complete reply always has bytes: this would loop forever
        out.error = "consumed nothing";
        return out;
      }
      out.replies.push_back(builder.Take().DebugString());
      out.consumed += consumed;
      buffer.erase(0, consumed);
    }
  }
  return out;
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
    Outcome expected;
    for (const Reply& r : replies) expected.replies.push_back(r.DebugString());
    expected.consumed = stream.size();
    ASSERT_EQ(Feed(stream, exposed, nullptr), expected);
    ASSERT_EQ(Feed(stream, exposed, &rng), expected);

    Outcome skipped;
    for (Reply r : replies) {
      StripAttributes(r);
      skipped.replies.push_back(r.DebugString());
    }
    skipped.consumed = stream.size();
    ASSERT_EQ(Feed(stream, Limits{}, &rng), skipped);
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
    const Outcome whole = Feed(mutated, small, nullptr);
    ASSERT_NE(whole.error, "consumed nothing");
    ASSERT_LE(whole.consumed, mutated.size());
    if (!whole.error.empty()) {
      ++errors;
      ASSERT_EQ(whole.error.rfind("RESP: ", 0), 0u) << whole.error;
    }
    ASSERT_EQ(Feed(mutated, small, &rng), whole);
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
    const Outcome whole = Feed(bytes, Limits{}, nullptr);
    ASSERT_EQ(Feed(bytes, Limits{}, &rng), whole) << testing::Written(Reply::Bulk(bytes));
  }
}

}  // namespace
}  // namespace rankd::redis
