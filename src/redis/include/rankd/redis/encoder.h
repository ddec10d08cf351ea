// Command encoder: each command is a RESP array of bulk strings appended to a caller-owned
// buffer, so any number of commands can share one write (pipelining).
//
// Arguments are bytes (binary-safe: CR, LF and NUL travel as they are) or numbers formatted
// in place with std::to_chars; nothing is ever interpolated into a command line.
//
//   std::string out;
//   AppendCommand(out, "HMGET", key, "score", "age");
//   CommandWriter cmd(out, 2 + ids.size());  // argument count known up front
//   cmd.Arg("MGET");
//   for (std::int64_t id : ids) cmd.Arg(id);
//
// No thread affinity; a writer appends to the one buffer it was given, which must outlive it.
#pragma once

#include <algorithm>
#include <cassert>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace rankd::redis {

// An integer type that is not bool or a character type (those are bytes, not numbers).
template <class T>
concept IntegerArg =
    std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char> &&
    !std::same_as<T, signed char> && !std::same_as<T, unsigned char> && !std::same_as<T, char8_t> &&
    !std::same_as<T, char16_t> && !std::same_as<T, char32_t> && !std::same_as<T, wchar_t>;

namespace detail {

// "$<size>\r\n<data>\r\n", growing the buffer at most once and writing it in one pass (a wave
// of commands is mostly short arguments: three appends each were a tenth of a feed request's
// encoding).
inline void AppendBulk(std::string& out, const char* data, std::size_t size) {
  char header[24];
  header[0] = '$';
  char* end = std::to_chars(header + 1, header + sizeof(header) - 2, size).ptr;
  *end++ = '\r';
  *end++ = '\n';
  const std::size_t header_size = static_cast<std::size_t>(end - header);
  const std::size_t old_size = out.size();
  const std::size_t needed = old_size + header_size + size + 2;
  // Room first: g++ 12's resize_and_overwrite hands the operation the new capacity, not the size
  // asked for, when it grows the string.
  if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));
  out.resize_and_overwrite(needed, [&](char* p, std::size_t) noexcept {
    std::memcpy(p + old_size, header, header_size);
    std::memcpy(p + old_size + header_size, data, size);
    p[needed - 2] = '\r';
    p[needed - 1] = '\n';
    return needed;
  });
}

}  // namespace detail

class CommandWriter {
 public:
  // Writes the array header; exactly `argc` Arg() calls must follow.
  CommandWriter(std::string& out, std::size_t argc) : out_(&out), remaining_(argc) {
    char header[24];
    header[0] = '*';
    char* end = std::to_chars(header + 1, header + sizeof(header) - 2, argc).ptr;
    *end++ = '\r';
    *end++ = '\n';
    out_->append(header, static_cast<std::size_t>(end - header));
  }
  CommandWriter(const CommandWriter&) = delete;
  CommandWriter& operator=(const CommandWriter&) = delete;
  ~CommandWriter() { assert(remaining_ == 0 && "CommandWriter: fewer arguments than declared"); }

  CommandWriter& Arg(std::string_view bytes) { return Bulk(bytes.data(), bytes.size()); }
  CommandWriter& Arg(std::span<const std::byte> bytes) {
    return Bulk(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  template <IntegerArg T>
  CommandWriter& Arg(T value) {
    char digits[24];
    const char* end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
    return Bulk(digits, static_cast<std::size_t>(end - digits));
  }
  // `count` arguments encoded already as bulk strings ("$<size>\r\n<bytes>\r\n" each, e.g. by
  // AppendBulks): the fixed tail of commands that differ only in their key.
  CommandWriter& EncodedArgs(std::string_view bulks, std::size_t count) {
    assert(remaining_ >= count && "CommandWriter: more arguments than declared");
    remaining_ -= count;
    out_->append(bulks);
    return *this;
  }
  // Shortest text that reads back as the same double; inf, -inf and nan as Redis spells them.
  CommandWriter& Arg(double value) {
    char digits[32];
    const char* end = std::to_chars(digits, digits + sizeof(digits), value).ptr;
    return Bulk(digits, static_cast<std::size_t>(end - digits));
  }

 private:
  CommandWriter& Bulk(const char* data, std::size_t size) {
    assert(remaining_ > 0 && "CommandWriter: more arguments than declared");
    --remaining_;
    detail::AppendBulk(*out_, data, size);
    return *this;
  }

  std::string* out_;
  std::size_t remaining_;
};

// Appends each of `args` as a bulk string, without an array header: arguments for
// CommandWriter::EncodedArgs.
inline void AppendBulks(std::string& out, std::span<const std::string> args) {
  for (const std::string& a : args) detail::AppendBulk(out, a.data(), a.size());
}

// Appends one command whose arguments are all known at the call site.
template <class... Args>
void AppendCommand(std::string& out, const Args&... args) {
  CommandWriter writer(out, sizeof...(Args));
  (writer.Arg(args), ...);
}

}  // namespace rankd::redis
