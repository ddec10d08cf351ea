// The scan half of ReplyParser: checks one reply is complete, well formed and within limits,
// resuming where it stopped when more bytes arrive. The walk half is a template in the header.
#include "rankd/redis/reply_parser.h"

#include <algorithm>
#include <string>

namespace rankd::redis {

namespace {

// Longest text of an integer or length line: a sign and 19 digits.
constexpr std::size_t kMaxNumberText = 20;
// Longest text of a double line. "%.17g" needs at most 24 characters; the slack admits other
// spellings (many digits, "-infinity") while still refusing an endless line quickly.
constexpr std::size_t kMaxDoubleText = 128;
// How much of a bad line an error message quotes.
constexpr std::size_t kQuoteBytes = 32;

// What a type byte introduces, as error messages call it.
std::string_view Describe(char marker) {
  switch (marker) {
    case '+':
      return "simple string";
    case '-':
      return "simple error";
    case ':':
      return "integer";
    case '$':
      return "bulk string";
    case '!':
      return "bulk error";
    case '=':
      return "verbatim string";
    case '_':
      return "null";
    case ',':
      return "double";
    case '#':
      return "boolean";
    case '(':
      return "big number";
    case '*':
      return "array";
    case '%':
      return "map";
    case '~':
      return "set";
    case '|':
      return "attribute";
    case '>':
      return "push";
    default:
      return "value";
  }
}

// The text between quotes, printable and at most kQuoteBytes long.
std::string Quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < std::min(text.size(), kQuoteBytes); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > kQuoteBytes) out += "...";
  out += '\'';
  return out;
}

enum class Line { kOk, kNeedMore, kNoCrlf, kTooLong };

// Finds the CRLF ending the line whose text starts at `from` and may be `max_text` bytes long.
Line FindLine(const char* base, std::size_t size, std::size_t from, std::size_t max_text,
              std::size_t* text_end) {
  const std::size_t available = size - from;
  const std::size_t window = available > max_text ? max_text + 1 : available;
  const void* cr = std::memchr(base + from, '\r', window);
  if (cr == nullptr) return available > max_text ? Line::kTooLong : Line::kNeedMore;
  const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(cr) - base);
  if (at + 1 == size) return Line::kNeedMore;
  if (base[at + 1] != '\n') return Line::kNoCrlf;
  *text_end = at;
  return Line::kOk;
}

bool IsBigNumber(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

namespace detail {

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty() || text.size() > kMaxDoubleText) return false;
  const char* p = text.data();
  const char* const end = p + text.size();
  bool negative = false;
  if (*p == '-' || *p == '+') {
    negative = *p == '-';
    ++p;
  }
  if (p == end || *p == '-' || *p == '+') return false;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(p, end, value, std::chars_format::general);
  if (ec != std::errc() || ptr != end) return false;
  *out = negative ? -value : value;
  return true;
}

}  // namespace detail

ReplyParser::ReplyParser(Limits limits) : limits_(limits) {
  limits_.max_depth = std::clamp<std::size_t>(limits_.max_depth, 1, Limits::kMaxDepthCeiling);
}

void ReplyParser::Reset() {
  scanned_ = 0;
  top_ = 0;
  stream_offset_ = 0;
  failed_ = false;
  error_ = ParseError{};
}

void ReplyParser::Consume(std::size_t size) {
  stream_offset_ += size;
  scanned_ = 0;
  top_ = 0;
}

ParseStatus ReplyParser::Skip(std::string_view buffer, std::size_t* consumed) {
  *consumed = 0;
  const ParseStatus status = Scan(buffer);
  if (status != ParseStatus::kComplete) return status;
  *consumed = scanned_;
  Consume(scanned_);
  return status;
}

bool ReplyParser::AtEndOfStream(std::size_t unconsumed) {
  if (failed_) return false;
  if (unconsumed == 0) return true;
  Fail(unconsumed,
       "stream ended inside a reply (" + std::to_string(unconsumed) + " bytes of it received)");
  return false;
}

ParseStatus ReplyParser::Fail(std::size_t at, std::string_view what) {
  failed_ = true;
  error_.offset = stream_offset_ + at;
  error_.message = "RESP: ";
  error_.message += what;
  error_.message += " at offset ";
  error_.message += std::to_string(error_.offset);
  return ParseStatus::kError;
}

ParseStatus ReplyParser::Scan(std::string_view buffer) {
  if (failed_) return ParseStatus::kError;
  const char* const base = buffer.data();
  const std::size_t size = buffer.size();
  std::size_t pos = scanned_;
  for (;;) {
    if (pos >= size) {
      scanned_ = pos;
      return ParseStatus::kNeedMore;
    }
    const std::size_t start = pos;
    const char marker = base[start];
    if (marker == '$') {
      // The most common value, a bulk string with a short length line, checked in one pass;
      // anything unusual about it takes the general path below.
      std::int64_t length = 0;
      const char* payload = detail::ReadShortNumberLine(base + start + 1, base + size, &length);
      if (payload != nullptr && length >= 0 &&
          static_cast<std::uint64_t>(length) <= limits_.max_bulk_length) {
        const std::size_t at = static_cast<std::size_t>(payload - base);
        const std::size_t n = static_cast<std::size_t>(length);
        if (size - at < n + 2) {
          scanned_ = start;
          return ParseStatus::kNeedMore;
        }
        if (base[at + n] == '\r' && base[at + n + 1] == '\n') {
          pos = at + n + 2;
          if (CountValue(false)) {
            scanned_ = pos;
            return ParseStatus::kComplete;
          }
          continue;
        }
      }
    }
    std::size_t max_text = kMaxNumberText;
    switch (marker) {
      case '+':
      case '-':
      case '(':
        max_text = limits_.max_bulk_length;
        break;
      case ',':
        max_text = kMaxDoubleText;
        break;
      case '#':
        max_text = 1;
        break;
      case '_':
        max_text = 0;
        break;
      case ':':
      case '$':
      case '!':
      case '=':
      case '*':
      case '%':
      case '~':
      case '|':
      case '>':
        break;
      default:
        return Fail(start, "unknown type byte " + Quote(std::string_view(&base[start], 1)));
    }

    std::size_t text_end = 0;
    switch (FindLine(base, size, start + 1, max_text, &text_end)) {
      case Line::kOk:
        break;
      case Line::kNeedMore:
        scanned_ = start;
        return ParseStatus::kNeedMore;
      case Line::kNoCrlf:
        return Fail(start, std::string(Describe(marker)) + " line with CR not followed by LF");
      case Line::kTooLong: {
        const std::string_view seen(base + start + 1, std::min(size - start - 1, max_text + 1));
        if (marker == '+' || marker == '-' || marker == '(') {
          return Fail(start, std::string(Describe(marker)) + " longer than the limit of " +
                                 std::to_string(limits_.max_bulk_length) + " bytes");
        }
        return Fail(start, std::string(Describe(marker)) + " line without CRLF: " + Quote(seen));
      }
    }
    const std::string_view text(base + start + 1, text_end - start - 1);
    pos = text_end + 2;

    bool attribute_done = false;
    switch (marker) {
      case '+':
      case '-':
        if (std::memchr(text.data(), '\n', text.size()) != nullptr) {
          return Fail(start, std::string("LF without CR in a ") + std::string(Describe(marker)));
        }
        break;
      case '(':
        if (!IsBigNumber(text)) return Fail(start, "invalid big number " + Quote(text));
        break;
      case ':': {
        std::int64_t value = 0;
        if (!detail::ParseInt64(text, &value)) {
          return Fail(start, "invalid integer " + Quote(text));
        }
        break;
      }
      case '_':
        break;  // the line was required to be empty
      case ',': {
        double value = 0;
        if (!detail::ParseDouble(text, &value)) {
          return Fail(start, "invalid double " + Quote(text));
        }
        break;
      }
      case '#':
        if (text != "t" && text != "f") return Fail(start, "invalid boolean " + Quote(text));
        break;
      case '$':
      case '!':
      case '=': {
        std::int64_t length = 0;
        if (!detail::ParseInt64(text, &length) || length < -1 || (length == -1 && marker != '$')) {
          return Fail(start,
                      "invalid length " + Quote(text) + " for " + std::string(Describe(marker)));
        }
        if (length == -1) break;  // null bulk string
        const std::uint64_t n = static_cast<std::uint64_t>(length);
        if (n > limits_.max_bulk_length) {
          return Fail(start, std::string(Describe(marker)) + " of " + std::to_string(n) +
                                 " bytes exceeds the limit of " +
                                 std::to_string(limits_.max_bulk_length));
        }
        if (marker == '=' && n < 4) {
          return Fail(start, "verbatim string of " + std::to_string(n) +
                                 " bytes is too short for its 'fmt:' prefix");
        }
        if (size - pos < n + 2) {
          scanned_ = start;
          return ParseStatus::kNeedMore;
        }
        if (base[pos + n] != '\r' || base[pos + n + 1] != '\n') {
          return Fail(start, std::string(Describe(marker)) + " of " + std::to_string(n) +
                                 " bytes not followed by CRLF");
        }
        if (marker == '=' && base[pos + 3] != ':') {
          return Fail(start, "verbatim string without its 'fmt:' prefix");
        }
        pos += n + 2;
        break;
      }
      default: {  // '*', '%', '~', '|', '>'
        std::int64_t count = 0;
        if (!detail::ParseInt64(text, &count) || count < -1 || (count == -1 && marker != '*')) {
          return Fail(start,
                      "invalid length " + Quote(text) + " for " + std::string(Describe(marker)));
        }
        if (count == -1) break;  // null array
        if (top_ + 1 > limits_.max_depth) {
          return Fail(start, std::string(Describe(marker)) + " nested deeper than the limit of " +
                                 std::to_string(limits_.max_depth));
        }
        const bool pairs = marker == '%' || marker == '|';
        const std::uint64_t values = static_cast<std::uint64_t>(count) * (pairs ? 2 : 1);
        if (values > limits_.max_elements) {
          return Fail(start, std::string(Describe(marker)) + " of " + std::to_string(count) +
                                 (pairs ? " entries" : " elements") + " exceeds the limit of " +
                                 std::to_string(limits_.max_elements) + " values");
        }
        const Type type = marker == '*'   ? Type::kArray
                          : marker == '%' ? Type::kMap
                          : marker == '~' ? Type::kSet
                          : marker == '|' ? Type::kAttribute
                                          : Type::kPush;
        if (values != 0) {
          stack_[top_++] = detail::Frame{values, type};
          continue;
        }
        attribute_done = type == Type::kAttribute;
        break;
      }
    }

    if (CountValue(attribute_done)) {
      scanned_ = pos;
      return ParseStatus::kComplete;
    }
  }
}

// One value is complete: counts it in its parent, closing every aggregate it completes. True
// when that completes the reply.
bool ReplyParser::CountValue(bool attribute_done) {
  for (;;) {
    if (attribute_done) return false;  // the value the attribute describes is still to come
    if (top_ == 0) return true;
    if (--stack_[top_ - 1].remaining != 0) return false;
    attribute_done = stack_[--top_].type == Type::kAttribute;
  }
}

}  // namespace rankd::redis
