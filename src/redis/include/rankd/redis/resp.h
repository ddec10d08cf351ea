// RESP vocabulary shared by the encoder, the parser and its sinks: reply types, the parser's
// limits and its error.
//
// Plain values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rankd::redis {

// The kinds of value a reply can hold (RESP2 and RESP3). Simple errors ('-') and bulk errors
// ('!') are both kError; RESP2's null bulk string and null array and RESP3's null are all kNull.
enum class Type : std::uint8_t {
  kSimpleString,  // '+'
  kError,         // '-' and '!'
  kInteger,       // ':'
  kBulkString,    // '$'
  kNull,          // '_', "$-1", "*-1"
  kDouble,        // ','
  kBoolean,       // '#'
  kBigNumber,     // '('
  kVerbatim,      // '='
  kArray,         // '*'
  kMap,           // '%'
  kSet,           // '~'
  kAttribute,     // '|'
  kPush,          // '>'
};

std::string_view TypeName(Type type);

// True for the aggregate types (arrays, maps, sets, attributes, pushes).
constexpr bool IsAggregate(Type type) { return type >= Type::kArray; }

// Bounds on what one reply may declare; anything beyond them is a parse error, so a broken or
// hostile peer can make the parser neither allocate nor wait without bound.
struct Limits {
  // Nested aggregates (the outermost counts as 1). At most kMaxDepthCeiling.
  std::size_t max_depth = 16;
  // Values one aggregate may declare (a map of n entries declares 2n values). 1 Mi, the same
  // bound Redis puts on the commands it accepts (proto-max-multibulk-len's default is 1024*1024).
  std::size_t max_elements = std::size_t{1} << 20;
  // Bytes in one bulk string, bulk error, verbatim string, or one line of a simple string,
  // simple error or big number. 512 MiB is the largest string Redis stores.
  std::size_t max_bulk_length = std::size_t{512} << 20;
  // Attributes ('|') are skipped unless exposed; exposed, a sink sees them as an aggregate of
  // type kAttribute just before the value they describe.
  bool expose_attributes = false;

  // The parser keeps its aggregate stack in a fixed array of this many entries.
  static constexpr std::size_t kMaxDepthCeiling = 64;
};

// Why the bytes from the server are not a valid reply. The connection they came from cannot be
// trusted any more: the client closes it.
struct ParseError {
  std::string message;       // says what is wrong and at which offset
  std::uint64_t offset = 0;  // byte offset in the stream, counted from the parser's start
};

enum class ParseStatus : std::uint8_t {
  kComplete,  // one whole reply was decoded and consumed
  kNeedMore,  // the buffer ends inside a reply; nothing was consumed
  kError,     // the bytes are not RESP (or break a limit); see ReplyParser::error()
};

}  // namespace rankd::redis
