// Incremental RESP2/RESP3 reply parser that decodes straight into a caller's sink.
//
// Parse() takes the unconsumed bytes of a connection's read buffer and either
//   - finds one complete reply, hands its values to the sink as views into the buffer, and
//     reports how many bytes it consumed (kComplete);
//   - finds the buffer ends inside a reply and consumes nothing (kNeedMore); or
//   - finds bytes that are not RESP or break a Limits bound (kError, see error()).
// It works in two passes. The scan checks the reply is complete and well formed, resuming
// where it stopped when more bytes arrive (so a large reply arriving in pieces is scanned
// once); the walk then visits the complete reply and calls the sink. The sink therefore never
// sees part of a reply or a malformed one, and its views stay valid until the caller consumes
// the bytes. Neither pass allocates.
//
// Between calls the caller may move the unconsumed bytes (compact or grow its buffer) and
// append to them, but must not change them: the scan's progress is kept as an offset.
//
// A sink is any object with the methods of NullSink (see sinks.h); derive from NullSink to
// handle only some of them, or from ReplySink to decode through virtual calls.
//
// Thread affinity: none, but one parser belongs to one byte stream (one connection) and is used
// by one thread at a time.
#pragma once

#include <array>
#include <cassert>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "rankd/redis/resp.h"
#include "rankd/redis/sinks.h"

namespace rankd::redis {

namespace detail {

// Strict RESP integer: optional sign, 1 to 19 decimal digits, no other characters, in range.
inline bool ParseInt64(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  const char* p = text.data();
  const char* end = p + text.size();
  bool negative = false;
  if (*p == '-' || *p == '+') {
    negative = *p == '-';
    ++p;
  }
  if (p == end || end - p > 19) return false;
  std::uint64_t value = 0;
  for (; p != end; ++p) {
    const unsigned digit = static_cast<unsigned char>(*p) - unsigned{'0'};
    if (digit > 9) return false;
    value = value * 10 + digit;  // 19 digits fit in uint64
  }
  constexpr std::uint64_t kMaxPositive = std::uint64_t{INT64_MAX};
  if (negative) {
    if (value > kMaxPositive + 1) return false;
    *out = static_cast<std::int64_t>(0 - value);
  } else {
    if (value > kMaxPositive) return false;
    *out = static_cast<std::int64_t>(value);
  }
  return true;
}

// The common shape of a length line ("$6\r\n"): 1 to 18 digits with an optional '-', then
// CRLF. `p` is just past the type byte. Returns the byte after the CRLF and sets *value, or
// nullptr for anything else (a longer or unusual number, a malformed or partial line), which
// the general path then handles. What it accepts, ParseInt64 accepts with the same value.
inline const char* ReadShortNumberLine(const char* p, const char* end, std::int64_t* value) {
  const bool negative = p != end && *p == '-';
  const char* digits = p + (negative ? 1 : 0);
  const char* q = digits;
  std::int64_t n = 0;
  for (; q != end; ++q) {
    const unsigned digit = static_cast<unsigned char>(*q) - unsigned{'0'};
    if (digit > 9) break;
    if (q - digits == 18) return nullptr;  // 18 digits always fit; more are the general path's
    n = n * 10 + static_cast<std::int64_t>(digit);
  }
  if (q == digits || end - q < 2 || q[0] != '\r' || q[1] != '\n') return nullptr;
  *value = negative ? -n : n;
  return q + 2;
}

// RESP3 double: decimal or exponent notation, "inf", "-inf", "nan" (any sign, any case).
bool ParseDouble(std::string_view text, double* out);

// Where an aggregate's children are counted while a reply is scanned or walked.
struct Frame {
  std::uint64_t remaining;  // values still to come in this aggregate
  Type type;
};

// Visits a reply the scan has validated; [p, end) holds exactly that reply.
template <class Sink>
void WalkReply(const char* p, const char* end, bool expose_attributes, Sink& sink) {
  std::array<Frame, Limits::kMaxDepthCeiling> stack;
  std::size_t top = 0;
  std::size_t muted = 0;  // attributes being skipped that enclose the current value
  // An aggregate ends. True when it was an attribute (not a value of its parent).
  auto end_aggregate = [&](Type type) {
    if (type == Type::kAttribute) {
      if (expose_attributes) {
        sink.OnAggregateEnd(type);
      } else {
        --muted;
      }
      return true;
    }
    if (muted == 0) sink.OnAggregateEnd(type);
    return false;
  };
  // One value is complete: count it in its parent, closing every aggregate it completes.
  // True when that completes the reply.
  auto count_value = [&](bool attribute_done) {
    for (;;) {
      if (attribute_done) return false;  // the value the attribute describes is still to come
      if (top == 0) return true;
      if (--stack[top - 1].remaining != 0) return false;
      attribute_done = end_aggregate(stack[--top].type);
    }
  };
  for (;;) {
    const char marker = *p;
    const char* line = p + 1;
    if (marker == '$') {  // the most common value: a bulk string with a short length line
      std::int64_t length = 0;
      const char* payload = ReadShortNumberLine(line, end, &length);
      if (payload != nullptr && length >= 0) {
        p = payload + length + 2;
        if (muted == 0) sink.OnBulk(std::string_view(payload, static_cast<std::size_t>(length)));
        if (count_value(false)) return;
        continue;
      }
    }
    const char* newline = static_cast<const char*>(std::memchr(line, '\n', end - line));
    const std::string_view text(line, static_cast<std::size_t>(newline - 1 - line));
    p = newline + 1;
    bool attribute_done = false;  // an attribute ended: it is not a value of its parent
    switch (marker) {
      case '+':
        if (muted == 0) sink.OnSimpleString(text);
        break;
      case '-':
        if (muted == 0) sink.OnError(text);
        break;
      case ':': {
        std::int64_t value = 0;
        ParseInt64(text, &value);
        if (muted == 0) sink.OnInteger(value);
        break;
      }
      case '$':
      case '!':
      case '=': {
        std::int64_t length = 0;
        ParseInt64(text, &length);
        if (length < 0) {
          if (muted == 0) sink.OnNull();
          break;
        }
        const std::string_view payload(p, static_cast<std::size_t>(length));
        p += length + 2;
        if (muted != 0) break;
        if (marker == '$') {
          sink.OnBulk(payload);
        } else if (marker == '!') {
          sink.OnError(payload);
        } else {
          sink.OnVerbatim(payload.substr(0, 3), payload.substr(4));
        }
        break;
      }
      case '_':
        if (muted == 0) sink.OnNull();
        break;
      case ',': {
        double value = 0;
        ParseDouble(text, &value);
        if (muted == 0) sink.OnDouble(value);
        break;
      }
      case '#':
        if (muted == 0) sink.OnBoolean(text[0] == 't');
        break;
      case '(':
        if (muted == 0) sink.OnBigNumber(text);
        break;
      default: {  // '*', '%', '~', '>', '|'
        std::int64_t count = 0;
        ParseInt64(text, &count);
        if (count < 0) {  // "*-1"
          if (muted == 0) sink.OnNull();
          break;
        }
        Type type = Type::kArray;
        std::uint64_t values = static_cast<std::uint64_t>(count);
        switch (marker) {
          case '%':
            type = Type::kMap;
            values *= 2;
            break;
          case '~':
            type = Type::kSet;
            break;
          case '>':
            type = Type::kPush;
            break;
          case '|':
            type = Type::kAttribute;
            values *= 2;
            if (!expose_attributes) ++muted;
            break;
          default:
            break;
        }
        if (muted == 0) sink.OnAggregateBegin(type, static_cast<std::size_t>(values));
        if (values != 0) {
          stack[top++] = Frame{values, type};
          continue;
        }
        attribute_done = end_aggregate(type);
        break;
      }
    }
    if (count_value(attribute_done)) return;
  }
}

}  // namespace detail

class ReplyParser {
 public:
  explicit ReplyParser(Limits limits = {});

  // Decodes at most one reply from `buffer` (the unconsumed bytes) into `sink`. On kComplete
  // sets *consumed to the reply's size; otherwise to 0.
  template <class Sink>
  ParseStatus Parse(std::string_view buffer, Sink& sink, std::size_t* consumed) {
    *consumed = 0;
    const ParseStatus status = Scan(buffer);
    if (status != ParseStatus::kComplete) return status;
    const std::size_t size = scanned_;
    detail::WalkReply(buffer.data(), buffer.data() + size, limits_.expose_attributes, sink);
    Consume(size);
    *consumed = size;
    return status;
  }

  // Consumes one reply without looking at it (a late reply whose command has given up).
  ParseStatus Skip(std::string_view buffer, std::size_t* consumed);

  // The stream ended with `unconsumed` bytes left: false (and error() set) if they are part of
  // a reply, i.e. the connection closed in the middle of one.
  bool AtEndOfStream(std::size_t unconsumed);

  // After kError: what is wrong and where. Every later call reports the same error.
  const ParseError& error() const { return error_; }
  bool failed() const { return failed_; }
  // Bytes consumed since construction or Reset().
  std::uint64_t offset() const { return stream_offset_; }
  const Limits& limits() const { return limits_; }

  // Forgets all state (a new connection).
  void Reset();

 private:
  ParseStatus Scan(std::string_view buffer);
  ParseStatus Fail(std::size_t at, std::string_view what);
  bool CountValue(bool attribute_done);
  void Consume(std::size_t size);

  Limits limits_;
  // Scan progress through the current reply: the offset of the first value not yet scanned,
  // and the aggregates open at that point.
  std::size_t scanned_ = 0;
  std::size_t top_ = 0;
  std::array<detail::Frame, Limits::kMaxDepthCeiling> stack_;
  std::uint64_t stream_offset_ = 0;
  bool failed_ = false;
  ParseError error_;
};

}  // namespace rankd::redis
