// Helpers shared by the redis tests: parse a whole buffer into replies, and write replies as a
// server would (the inverse of the parser, for round trips and randomized tests).
#pragma once

#include <charconv>
#include <cmath>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"

namespace rankd::redis {

// GoogleTest prints replies readably.
inline void PrintTo(const Reply& r, std::ostream* os) { *os << r.DebugString(); }

}  // namespace rankd::redis

namespace rankd::redis::testing {

struct Parsed {
  std::vector<Reply> replies;
  std::size_t consumed = 0;
  bool error = false;
  std::string message;  // the parse error, if any
  std::uint64_t offset = 0;
};

// Parses replies from `bytes` until it is used up, more is needed, or an error.
inline Parsed ParseAll(std::string_view bytes, Limits limits = {}) {
  Parsed out;
  ReplyParser parser(limits);
  for (;;) {
    ReplyBuilder builder;
    std::size_t consumed = 0;
    const ParseStatus status = parser.Parse(bytes.substr(out.consumed), builder, &consumed);
    if (status == ParseStatus::kError) {
      out.error = true;
      out.message = parser.error().message;
      out.offset = parser.error().offset;
      return out;
    }
    if (status == ParseStatus::kNeedMore) return out;
    out.consumed += consumed;
    out.replies.push_back(builder.Take());
    if (out.consumed == bytes.size()) return out;
  }
}

// Parses exactly one reply that must fill `bytes`; an error reply of type kError with the parse
// error's message otherwise (tests compare it).
inline Reply ParseOne(std::string_view bytes, Limits limits = {}) {
  Parsed p = ParseAll(bytes, limits);
  if (p.error) return Reply::Text(Type::kError, "PARSE " + p.message);
  if (p.replies.size() != 1 || p.consumed != bytes.size()) {
    return Reply::Text(Type::kError, "PARSE incomplete or trailing bytes");
  }
  return p.replies[0];
}

// Writes `r` in RESP3 (or RESP2, where nulls become "$-1"/"*-1" and RESP3-only types must not
// occur; errors with CR or LF become bulk errors in RESP3 only). Attributes are written before the
// value.
inline void WriteReply(const Reply& r, std::string& out, bool resp2 = false) {
  auto line = [&](char marker, std::string_view text) {
    out += marker;
    out += text;
    out += "\r\n";
  };
  auto blob = [&](char marker, std::string_view payload) {
    line(marker, std::to_string(payload.size()));
    out += payload;
    out += "\r\n";
  };
  std::size_t first = 0;
  for (const std::size_t entries : r.AttributeMaps()) {  // each map in a row with its own header
    line('|', std::to_string(entries));
    for (std::size_t i = first; i < first + 2 * entries; ++i) WriteReply(r.attributes[i], out, resp2);
    first += 2 * entries;
  }
  switch (r.type) {
    case Type::kSimpleString:
      line('+', r.str);
      return;
    case Type::kError:
      // A message with CR or LF cannot be a simple error line; RESP3 has bulk errors for it.
      if (!resp2 && r.str.find_first_of("\r\n") != std::string::npos) {
        blob('!', r.str);
      } else {
        line('-', r.str);
      }
      return;
    case Type::kInteger:
      line(':', std::to_string(r.integer));
      return;
    case Type::kBulkString:
      blob('$', r.str);
      return;
    case Type::kNull:
      out += resp2 ? "$-1\r\n" : "_\r\n";
      return;
    case Type::kDouble: {
      if (std::isnan(r.number)) {
        line(',', "nan");
      } else {
        char digits[32];
        char* end = std::to_chars(digits, digits + sizeof(digits), r.number).ptr;
        line(',', std::string_view(digits, static_cast<std::size_t>(end - digits)));
      }
      return;
    }
    case Type::kBoolean:
      line('#', r.boolean ? "t" : "f");
      return;
    case Type::kBigNumber:
      line('(', r.str);
      return;
    case Type::kVerbatim:
      blob('=', r.format + ":" + r.str);
      return;
    case Type::kArray:
    case Type::kSet:
    case Type::kPush:
    case Type::kAttribute:
    case Type::kMap: {
      const bool pairs = r.type == Type::kMap || r.type == Type::kAttribute;
      const char marker = r.type == Type::kArray  ? '*'
                          : r.type == Type::kSet  ? '~'
                          : r.type == Type::kPush ? '>'
                          : r.type == Type::kMap  ? '%'
                                                  : '|';
      line(marker, std::to_string(pairs ? r.elements.size() / 2 : r.elements.size()));
      for (const Reply& e : r.elements) WriteReply(e, out, resp2);
      return;
    }
  }
}

inline std::string Written(const Reply& r, bool resp2 = false) {
  std::string out;
  WriteReply(r, out, resp2);
  return out;
}

}  // namespace rankd::redis::testing
