// JsonObjectWriter: writes one flat JSON object of string members into a std::string, escaping
// as RFC 8259 asks (the escapes serde_json writes: \" \\ \b \f \n \r \t, other control characters
// as \u00xx; everything else, UTF-8 included, as is). The HTTP benchmark's /json handler
// serializes its object with it on every request, as the peers do with serde_json: no DOM, no
// allocation beyond the caller's string.
// Thread affinity: none. Ownership: appends to a string the caller owns and keeps alive.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rankd::bench {

class JsonObjectWriter {
 public:
  // Opens the object at the end of `out`.
  explicit JsonObjectWriter(std::string& out) : out_(out) { out_.push_back('{'); }

  // Appends "key":"value" (after a comma from the second member on).
  JsonObjectWriter& Member(std::string_view key, std::string_view value) {
    if (members_++ != 0) out_.push_back(',');
    AppendString(key);
    out_.push_back(':');
    AppendString(value);
    return *this;
  }

  // Closes the object; write nothing more through this writer.
  void Close() { out_.push_back('}'); }

 private:
  void AppendString(std::string_view text) {
    out_.push_back('"');
    std::size_t run = 0;  // start of the bytes not yet appended, which need no escape
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out_.append(text.data() + run, i - run);
      run = i + 1;
      AppendEscape(c);
    }
    out_.append(text.data() + run, text.size() - run);
    out_.push_back('"');
  }

  // The escape of '"', '\\' or a control character: the short form where JSON has one.
  void AppendEscape(unsigned char c) {
    static constexpr std::string_view kShort = "\"\\\b\f\n\r\t";
    static constexpr std::string_view kLetter = "\"\\bfnrt";
    static constexpr char kHex[] = "0123456789abcdef";
    const std::size_t i = kShort.find(static_cast<char>(c));
    if (i != std::string_view::npos) {
      const char escape[] = {'\\', kLetter[i]};
      out_.append(escape, sizeof escape);
    } else {
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      out_.append(escape, sizeof escape);
    }
  }

  std::string& out_;
  std::size_t members_ = 0;
};

}  // namespace rankd::bench
