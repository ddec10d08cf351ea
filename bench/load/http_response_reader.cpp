#include "http_response_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

namespace rankd::bench_load {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// At most 80 bytes of `s` for an error message, non-printable bytes as '?'.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  out += s.size() > 80 ? "...'" : "'";
  return out;
}

// Whether the comma-separated `value` of a Connection header lists `token`.
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    if (EqualsIgnoreCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

HttpResponseReader::Result HttpResponseReader::Feed(std::string_view bytes) {
  if (failed_) return Result::kError;
  buffer_.append(bytes);
  return Parse();
}

std::size_t HttpResponseReader::Consume() {
  buffer_.erase(0, head_bytes_ + body_bytes_);
  head_bytes_ = body_bytes_ = 0;
  status_ = 0;
  keep_alive_ = true;
  retry_after_ = false;
  return buffer_.size();
}

HttpResponseReader::Result HttpResponseReader::Fail(std::string message) {
  failed_ = true;
  error_ = std::move(message);
  return Result::kError;
}

HttpResponseReader::Result HttpResponseReader::Parse() {
  if (head_bytes_ == 0) {
    const std::size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos && buffer_.size() <= kMaxHeadBytes) return Result::kNeedMore;
    if (end == std::string::npos || end + 4 > kMaxHeadBytes) {
      return Fail("the status line and headers exceed " + std::to_string(kMaxHeadBytes) + " bytes");
    }
    if (const Result r = ParseHead(std::string_view(buffer_).substr(0, end + 2));
        r == Result::kError) {
      return r;
    }
    head_bytes_ = end + 4;
  }
  return buffer_.size() >= head_bytes_ + body_bytes_ ? Result::kResponse : Result::kNeedMore;
}

// `head`: the status line and the header lines, each ending in CRLF.
HttpResponseReader::Result HttpResponseReader::ParseHead(std::string_view head) {
  std::size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  head.remove_prefix(eol + 2);
  // HTTP-version SP 3DIGIT SP reason-phrase (the reason may be empty, the space may not).
  const bool http10 = status_line.starts_with("HTTP/1.0 ");
  if ((!http10 && !status_line.starts_with("HTTP/1.1 ")) || status_line.size() < 13 ||
      status_line[12] != ' ' ||
      !std::all_of(status_line.begin() + 9, status_line.begin() + 12,
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return Fail("malformed status line " + Quote(status_line));
  }
  status_ = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  if (status_ < 200) {
    return Fail("interim response " + std::to_string(status_) + " (no request asks for one)");
  }
  keep_alive_ = !http10;
  bool has_length = false;
  while (!head.empty()) {
    eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Fail("malformed header line " + Quote(line));
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      std::size_t length = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || end != value.data() + value.size() || length > kMaxBodyBytes) {
        return Fail("bad Content-Length " + Quote(value));
      }
      if (has_length && length != body_bytes_) return Fail("two different Content-Length headers");
      has_length = true;
      body_bytes_ = length;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return Fail("Transfer-Encoding " + Quote(value) + " is not supported (Content-Length only)");
    } else if (EqualsIgnoreCase(name, "Retry-After")) {
      retry_after_ = true;
    } else if (EqualsIgnoreCase(name, "Connection")) {
      if (ListsToken(value, "close")) keep_alive_ = false;
      if (http10 && ListsToken(value, "keep-alive")) keep_alive_ = true;
    }
  }
  if (!has_length && status_ != 204 && status_ != 304) {
    return Fail("status " + std::to_string(status_) +
                " without Content-Length (a body that ends with the connection is not supported)");
  }
  return Result::kNeedMore;
}

}  // namespace rankd::bench_load
