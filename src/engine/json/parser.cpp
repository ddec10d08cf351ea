#include "json/parser.h"

#include <charconv>
#include <cstdint>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "json/canonical.h"
#include "json/pointer.h"
#include "problems/problem_codes.h"

namespace rankd::engine::json {
namespace {

// Objects with more members than this check names for repeats through a hash set rather than by
// comparing each new name with the earlier ones, so a huge object stays linear.
constexpr std::size_t kLinearDuplicateCheck = 8;

// Where the value being read sits: a chain of frames on the reader's stack, turned into a JSON
// pointer only when there is an error.
struct PathFrame {
  const PathFrame* parent = nullptr;
  std::string_view name;  // a member name, or
  std::size_t index = 0;  // an array index
  bool is_index = false;
};

std::string PointerOf(const PathFrame* frame) {
  std::vector<const PathFrame*> frames;
  for (; frame != nullptr; frame = frame->parent) frames.push_back(frame);
  std::string pointer;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if ((*it)->is_index) {
      AppendPointerIndex(pointer, (*it)->index);
    } else {
      AppendPointerName(pointer, (*it)->name);
    }
  }
  return pointer;
}

// Thrown inside the reader, caught by Parse.
struct Failure {
  ParseError error;
};

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Value ReadDocument() {
    Value value = ReadValue(nullptr, 0);
    SkipWhitespace();
    if (pos_ != text_.size())
      Fail(codes::kJsonSyntax, pos_, nullptr, "unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(std::string_view code, std::size_t offset, const PathFrame* path,
                         std::string what) {
    ParseError error;
    error.code = code;
    error.offset = offset;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++error.line;
        error.column = 1;
      } else {
        ++error.column;
      }
    }
    error.pointer = PointerOf(path);
    error.message = "at byte " + std::to_string(offset) + " (line " + std::to_string(error.line) +
                    ", column " + std::to_string(error.column) + "): " + std::move(what);
    throw Failure{std::move(error)};
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  unsigned char Peek() const { return static_cast<unsigned char>(text_[pos_]); }

  void SkipWhitespace() {
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  std::string Describe(std::size_t offset) const {
    if (offset >= text_.size()) return "the end of the text";
    const auto c = static_cast<unsigned char>(text_[offset]);
    if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
  }

  Value ReadValue(const PathFrame* path, std::size_t depth) {
    SkipWhitespace();
    if (AtEnd())
      Fail(codes::kJsonSyntax, pos_, path, "expected a value, found the end of the text");
    switch (Peek()) {
      case '{':
        return ReadObject(path, depth + 1);
      case '[':
        return ReadArray(path, depth + 1);
      case '"':
        return Value::String(ReadString(path));
      case 't':
        ReadLiteral("true", path);
        return Value::Bool(true);
      case 'f':
        ReadLiteral("false", path);
        return Value::Bool(false);
      case 'n':
        ReadLiteral("null", path);
        return Value();
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) return ReadNumber(path);
        Fail(codes::kJsonSyntax, pos_, path, "expected a value, found " + Describe(pos_));
    }
  }

  void ReadLiteral(std::string_view word, const PathFrame* path) {
    if (text_.substr(pos_, word.size()) != word) {
      Fail(codes::kJsonSyntax, pos_, path, "expected a value, found " + Describe(pos_));
    }
    pos_ += word.size();
  }

  void CheckDepth(std::size_t depth, const PathFrame* path) {
    if (depth > kMaxDepth) {
      Fail(codes::kJsonTooDeep, pos_, path,
           "arrays and objects nest deeper than " + std::to_string(kMaxDepth) + " levels");
    }
  }

  Value ReadObject(const PathFrame* path, std::size_t depth) {
    CheckDepth(depth, path);
    ++pos_;  // '{'
    Value::Object members;
    std::unordered_set<std::string> names;  // once there are more than kLinearDuplicateCheck
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return Value::MakeObject(std::move(members));
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || Peek() != '"') {
        Fail(codes::kJsonSyntax, pos_, path,
             "expected a member name in double quotes, found " + Describe(pos_));
      }
      const std::size_t name_offset = pos_;
      std::string name = ReadString(path);
      PathFrame member{path, name, 0, false};
      if (IsRepeated(members, names, name)) {
        Fail(codes::kJsonDuplicateMember, name_offset, &member,
             "the object already has a member named " + QuoteJson(name));
      }
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') {
        Fail(codes::kJsonSyntax, pos_, &member,
             "expected ':' after a member name, found " + Describe(pos_));
      }
      ++pos_;
      Value value = ReadValue(&member, depth);
      members.push_back(Member{std::move(name), std::move(value)});
      if (!NextOrEnd('}', path, "a member")) return Value::MakeObject(std::move(members));
    }
  }

  // After a member or element: true at ',' (another follows), false at `close` (the end).
  bool NextOrEnd(char close, const PathFrame* path, std::string_view after) {
    SkipWhitespace();
    if (!AtEnd() && (Peek() == ',' || Peek() == close)) return text_[pos_++] == ',';
    Fail(codes::kJsonSyntax, pos_, path,
         "expected ',' or '" + std::string(1, close) + "' after " + std::string(after) +
             ", found " + Describe(pos_));
  }

  // Whether `name` is already a member; keeps `names` once the object outgrows a linear check.
  static bool IsRepeated(const Value::Object& members, std::unordered_set<std::string>& names,
                         const std::string& name) {
    if (members.size() < kLinearDuplicateCheck) {
      for (const Member& m : members) {
        if (m.name == name) return true;
      }
      return false;
    }
    if (names.empty()) {
      for (const Member& m : members) names.insert(m.name);
    }
    return !names.insert(name).second;
  }

  Value ReadArray(const PathFrame* path, std::size_t depth) {
    CheckDepth(depth, path);
    ++pos_;  // '['
    Value::Array elements;
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return Value::MakeArray(std::move(elements));
    }
    while (true) {
      PathFrame element{path, {}, elements.size(), true};
      elements.push_back(ReadValue(&element, depth));
      if (!NextOrEnd(']', path, "an element")) return Value::MakeArray(std::move(elements));
    }
  }

  // Four hex digits at pos_ as a UTF-16 code unit.
  std::uint32_t ReadHex4(const PathFrame* path) {
    std::uint32_t unit = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (AtEnd()) Fail(codes::kJsonSyntax, pos_, path, "a \\u escape needs four hex digits");
      const char c = text_[pos_];
      unit <<= 4;
      if (c >= '0' && c <= '9') {
        unit |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        unit |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        unit |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        Fail(codes::kJsonSyntax, pos_, path,
             "a \\u escape needs four hex digits, found " + Describe(pos_));
      }
    }
    return unit;
  }

  // Appends a code point (or a lone surrogate, as WTF-8) in UTF-8.
  static void AppendUtf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  void ReadEscape(std::string& out, const PathFrame* path) {
    const std::size_t start = pos_;
    ++pos_;  // '\'
    if (AtEnd()) Fail(codes::kJsonSyntax, start, path, "a string ends inside an escape");
    const char c = text_[pos_++];
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        break;
      default:
        Fail(codes::kJsonSyntax, start, path, "unknown escape \\" + Describe(pos_ - 1));
    }
    std::uint32_t unit = ReadHex4(path);
    // A high surrogate followed by an escaped low surrogate is one code point; any other
    // surrogate stays a lone one, as JavaScript strings allow.
    if (unit >= 0xd800 && unit <= 0xdbff && text_.substr(pos_, 2) == "\\u") {
      const std::size_t after_high = pos_;
      pos_ += 2;
      const std::uint32_t low = ReadHex4(path);
      if (low >= 0xdc00 && low <= 0xdfff) {
        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
      } else {
        pos_ = after_high;
      }
    }
    AppendUtf8(out, unit);
  }

  // The length of the UTF-8 sequence at pos_ (RFC 3629: no overlong forms, no surrogates, at
  // most U+10FFFF), or 0 when the bytes there are not UTF-8.
  std::size_t Utf8SequenceLength() const {
    const auto at = [this](std::size_t i) -> unsigned {
      return pos_ + i < text_.size() ? static_cast<unsigned char>(text_[pos_ + i]) : 0u;
    };
    const auto continuation = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xbf) {
      return at(i) >= lo && at(i) <= hi;
    };
    const unsigned lead = at(0);
    if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
    if (lead == 0xe0) return continuation(1, 0xa0) && continuation(2) ? 3 : 0;
    if ((lead >= 0xe1 && lead <= 0xec) || lead == 0xee || lead == 0xef) {
      return continuation(1) && continuation(2) ? 3 : 0;
    }
    if (lead == 0xed) return continuation(1, 0x80, 0x9f) && continuation(2) ? 3 : 0;
    if (lead == 0xf0) return continuation(1, 0x90) && continuation(2) && continuation(3) ? 4 : 0;
    if (lead >= 0xf1 && lead <= 0xf3) {
      return continuation(1) && continuation(2) && continuation(3) ? 4 : 0;
    }
    if (lead == 0xf4)
      return continuation(1, 0x80, 0x8f) && continuation(2) && continuation(3) ? 4 : 0;
    return 0;
  }

  std::string ReadString(const PathFrame* path) {
    const std::size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (AtEnd()) Fail(codes::kJsonSyntax, start, path, "a string is not closed");
      const unsigned char c = Peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        ReadEscape(out, path);
      } else if (c < 0x20) {
        Fail(codes::kJsonSyntax, pos_, path,
             "a control character (" + Describe(pos_) + ") must be escaped in a string");
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
      } else {
        const std::size_t length = Utf8SequenceLength();
        if (length == 0) Fail(codes::kJsonSyntax, pos_, path, "invalid UTF-8 in a string");
        out.append(text_, pos_, length);
        pos_ += length;
      }
    }
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  Value ReadNumber(const PathFrame* path) {
    const std::size_t start = pos_;
    const auto fail = [&] {
      Fail(codes::kJsonSyntax, pos_, path, "a number is malformed, found " + Describe(pos_));
    };
    bool negative = false;
    if (text_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    // The value is 0.d1d2... × 10^(first_significant + exponent): that sign tells an overflow
    // from an underflow when from_chars reports the value out of range.
    long long first_significant = 0;
    bool seen_significant = false;
    long long digits_before_point = 0;
    if (AtEnd() || !IsDigit(text_[pos_])) fail();
    if (text_[pos_] == '0') {
      ++pos_;
    } else {
      seen_significant = true;
      while (!AtEnd() && IsDigit(text_[pos_])) {
        ++digits_before_point;
        ++pos_;
      }
      first_significant = digits_before_point;
    }
    bool integer_literal = true;
    if (!AtEnd() && text_[pos_] == '.') {
      integer_literal = false;
      ++pos_;
      if (AtEnd() || !IsDigit(text_[pos_])) fail();
      long long place = 0;
      while (!AtEnd() && IsDigit(text_[pos_])) {
        --place;
        if (!seen_significant && text_[pos_] != '0') {
          seen_significant = true;
          first_significant = place + 1;
        }
        ++pos_;
      }
    }
    long long exponent = 0;
    if (!AtEnd() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integer_literal = false;
      ++pos_;
      bool exponent_negative = false;
      if (!AtEnd() && (text_[pos_] == '+' || text_[pos_] == '-')) {
        exponent_negative = text_[pos_] == '-';
        ++pos_;
      }
      if (AtEnd() || !IsDigit(text_[pos_])) fail();
      while (!AtEnd() && IsDigit(text_[pos_])) {
        if (exponent < 1'000'000'000) exponent = exponent * 10 + (text_[pos_] - '0');
        ++pos_;
      }
      if (exponent_negative) exponent = -exponent;
    }
    const std::string_view lexeme = text_.substr(start, pos_ - start);
    double value = 0;
    const auto [end, ec] = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), value);
    if (ec == std::errc::result_out_of_range) {
      // Either beyond the largest float64 (JSON.parse gives Infinity, which no plan can hold)
      // or below half the smallest subnormal (JSON.parse gives 0, keeping the sign).
      if (seen_significant && first_significant + exponent > 0) {
        Fail(codes::kJsonNumberOutOfRange, start, path,
             "the number " + std::string(lexeme.substr(0, 40)) + " is beyond the float64 range");
      }
      value = negative ? -0.0 : 0.0;
    } else if (ec != std::errc() || end != lexeme.data() + lexeme.size()) {
      Fail(codes::kJsonSyntax, start, path, "a number is malformed");
    }
    Value number = Value::Number(value, integer_literal);
    if (integer_literal) {
      // The literal's exact value when it fits int64 (ids past 2^53 in requests).
      std::int64_t exact = 0;
      const auto [int_end, int_ec] =
          std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), exact);
      if (int_ec == std::errc() && int_end == lexeme.data() + lexeme.size()) {
        number.set_exact_integer(exact);
      }
    }
    return number;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::expected<Value, ParseError> Parse(std::string_view text) {
  try {
    return Reader(text).ReadDocument();
  } catch (Failure& failure) {
    return std::unexpected(std::move(failure.error));
  }
}

}  // namespace rankd::engine::json
