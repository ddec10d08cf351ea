#include "rankd/http/request_parser.h"

#include <cstring>

namespace rankd::http {
namespace {

// RFC 9110 tchar: the characters of a token (methods, header names).
constexpr bool IsTokenChar(unsigned char c) noexcept {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

struct TokenTable {
  bool token[256] = {};
  bool field_value[256] = {};  // VCHAR, obs-text, SP and HTAB
  bool target[256] = {};       // visible ASCII and obs-text: no SP, no controls
  constexpr TokenTable() {
    for (int c = 0; c < 256; ++c) {
      const auto u = static_cast<unsigned char>(c);
      token[c] = IsTokenChar(u);
      field_value[c] = (c >= 0x21 && c != 0x7f) || c == ' ' || c == '\t';
      target[c] = c >= 0x21 && c != 0x7f;
    }
  }
};
constexpr TokenTable kTable;

ParseResult Error(int status, std::string_view reason) noexcept {
  ParseResult r;
  r.status = ParseStatus::kError;
  r.error_status = status;
  r.reason = reason;
  return r;
}

std::string_view TrimOws(std::string_view v) noexcept {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Whether the comma-separated list `value` holds `option` (case-insensitive).
bool ListContains(std::string_view value, std::string_view option) noexcept {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = TrimOws(value.substr(0, comma));
    if (EqualsIgnoreCase(item, option)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

constexpr std::string_view kHeadEnd = "\r\n\r\n";

}  // namespace

ParseResult RequestParser::ParseAfterEmptyLines(std::string_view bytes, Request* request) {
  // Empty lines before a request line are ignored (RFC 9112 section 2.2: a server SHOULD ignore
  // at least one); they count towards the head's size limit.
  std::size_t skipped = 0;
  while (bytes.size() - skipped >= 2 && bytes[skipped] == '\r' && bytes[skipped + 1] == '\n' &&
         skipped < limits_.max_header_bytes) {
    skipped += 2;
  }
  if (bytes.size() - skipped == 1 && bytes[skipped] == '\r') return ParseResult{};  // half a CRLF
  if (skipped == 0) return ParseRequest(bytes, request, limits_.max_header_bytes);
  if (skipped >= limits_.max_header_bytes) {
    scanned_ = 0;
    return Error(431, "request header fields too large");
  }
  ParseResult result =
      ParseRequest(bytes.substr(skipped), request, limits_.max_header_bytes - skipped);
  if (result.status == ParseStatus::kComplete) result.consumed += skipped;
  if (result.status == ParseStatus::kNeedBody) result.needed += skipped;
  return result;
}

ParseResult RequestParser::ParseRequest(std::string_view bytes, Request* request,
                                        std::size_t max_head_bytes) {
  // Find the blank line ending the head, resuming where the previous call stopped (minus the
  // three bytes a terminator could straddle).
  const std::size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
  const std::size_t limit = bytes.size() < max_head_bytes ? bytes.size() : max_head_bytes;
  std::size_t end = std::string_view::npos;
  if (limit > from) {
    const void* hit = ::memmem(bytes.data() + from, limit - from, kHeadEnd.data(), kHeadEnd.size());
    if (hit != nullptr) end = static_cast<const char*>(hit) - bytes.data() + kHeadEnd.size();
  }
  // A line ending in a bare LF (RFC 9112 section 2.2 lets a server accept it; rankd does not, as
  // laxness about line endings is how requests are smuggled past proxies) is refused at once,
  // not left waiting for a CRLF CRLF that will never come. Only the bytes not scanned before are
  // looked at, up to the head's end when it has come: a head given whole is refused as one given
  // in pieces. (A head that does not start with a method is the request line's error.)
  if (!bytes.empty() && kTable.token[static_cast<unsigned char>(bytes[0])]) {
    const std::size_t scan_end = end == std::string_view::npos ? limit : end;
    for (std::size_t at = from; at < scan_end;) {
      const void* lf = std::memchr(bytes.data() + at, '\n', scan_end - at);
      if (lf == nullptr) break;
      const std::size_t i = static_cast<const char*>(lf) - bytes.data();
      if (bytes[i - 1] != '\r') {  // i > 0: bytes[0] is a token character
        scanned_ = 0;
        return Error(400, "a line of the head ends in a bare LF (lines end with CRLF)");
      }
      at = i + 1;
    }
  }
  if (end == std::string_view::npos) {
    scanned_ = limit;
    if (bytes.size() >= max_head_bytes) {
      scanned_ = 0;
      return Error(431, "request header fields too large");
    }
    // Reject garbage early instead of waiting for a blank line that may never come.
    if (!bytes.empty() && !kTable.token[static_cast<unsigned char>(bytes[0])]) {
      scanned_ = 0;
      if (bytes[0] == '\r' || bytes[0] == '\n') return Error(400, "empty line before request");
      return Error(400, "malformed request line");
    }
    return ParseResult{};
  }
  scanned_ = 0;
  ParseResult head = ParseHead(bytes.substr(0, end), request);
  if (head.status == ParseStatus::kError) return head;
  const std::uint64_t total = end + request->content_length;
  if (bytes.size() < total) {
    head.status = ParseStatus::kNeedBody;
    head.needed = static_cast<std::size_t>(total);
    return head;
  }
  request->body = bytes.substr(end, static_cast<std::size_t>(request->content_length));
  head.status = ParseStatus::kComplete;
  head.consumed = static_cast<std::size_t>(total);
  return head;
}

ParseResult RequestParser::ParseHead(std::string_view head, Request* request) const {
  request->Clear();
  const char* p = head.data();
  const char* const end = head.data() + head.size();  // ends with "\r\n\r\n"

  // request-line = method SP request-target SP HTTP-version CRLF
  const char* start = p;
  while (kTable.token[static_cast<unsigned char>(*p)]) ++p;
  if (p == start || *p != ' ') return Error(400, "malformed request line: bad method");
  request->method = std::string_view(start, p - start);
  start = ++p;
  while (kTable.target[static_cast<unsigned char>(*p)]) ++p;
  if (p == start || *p != ' ') return Error(400, "malformed request line: bad target");
  request->target = std::string_view(start, p - start);
  if (request->target.front() != '/' && request->target != "*" &&
      request->target.find("://") == std::string_view::npos && request->method != "CONNECT") {
    return Error(400, "malformed request line: bad target");
  }
  ++p;
  if (end - p < 10 || std::memcmp(p, "HTTP/", 5) != 0) {
    return Error(400, "malformed request line: bad version");
  }
  if (p[5] < '0' || p[5] > '9' || p[6] != '.' || p[7] < '0' || p[7] > '9' || p[8] != '\r' ||
      p[9] != '\n') {
    return Error(400, "malformed request line: bad version");
  }
  if (p[5] != '1' || p[7] > '1') return Error(505, "HTTP version not supported");
  request->version_minor = p[7] - '0';
  request->keep_alive = request->version_minor == 1;
  p += 10;

  // An absolute-form target (RFC 9112 section 3.2.2; a server MUST accept it) is served by its
  // path and query, as the origin-form it carries; its authority plays no part in routing.
  std::string_view origin = request->target;
  if (origin.front() != '/') {
    if (const std::size_t scheme = origin.find("://"); scheme != std::string_view::npos) {
      const std::size_t rest = origin.find_first_of("/?", scheme + 3);
      origin = rest == std::string_view::npos ? std::string_view() : origin.substr(rest);
    }
  }
  const std::size_t q = origin.find('?');
  request->path = origin.substr(0, q);
  if (request->path.empty()) request->path = "/";
  if (q != std::string_view::npos) request->query = origin.substr(q + 1);

  // header-field = field-name ":" OWS field-value OWS CRLF, until the blank line.
  bool seen_length = false, seen_encoding = false, chunked = false;
  int hosts = 0;
  bool connection_close = false, connection_keep_alive = false;
  while (!(p[0] == '\r' && p[1] == '\n')) {
    if (*p == ' ' || *p == '\t') return Error(400, "malformed header: obsolete line folding");
    start = p;
    while (kTable.token[static_cast<unsigned char>(*p)]) ++p;
    if (p == start || *p != ':') return Error(400, "malformed header: bad field name");
    const std::string_view name(start, p - start);
    start = ++p;
    while (kTable.field_value[static_cast<unsigned char>(*p)]) ++p;
    if (p[0] != '\r' || p[1] != '\n') return Error(400, "malformed header: bad field value");
    const std::string_view value = TrimOws(std::string_view(start, p - start));
    p += 2;
    if (request->headers.size() == limits_.max_headers) {
      return Error(431, "too many header fields");
    }
    request->headers.push_back({name, value});

    // The headers that decide framing and the connection's fate.
    switch (name.size()) {
      case 4:
        if (EqualsIgnoreCase(name, "host")) ++hosts;
        break;
      case 6:
        if (EqualsIgnoreCase(name, "expect")) {
          if (!EqualsIgnoreCase(value, "100-continue"))
            return Error(417, "unsupported expectation");
          request->expect_continue = true;
        }
        break;
      case 10:
        if (EqualsIgnoreCase(name, "connection")) {
          connection_close |= ListContains(value, "close");
          connection_keep_alive |= ListContains(value, "keep-alive");
        }
        break;
      case 14:
        if (EqualsIgnoreCase(name, "content-length")) {
          if (value.empty() || value.size() > 19) return Error(400, "bad Content-Length");
          std::uint64_t n = 0;
          for (char c : value) {
            if (c < '0' || c > '9') return Error(400, "bad Content-Length");
            n = n * 10 + static_cast<unsigned>(c - '0');
          }
          if (seen_length && n != request->content_length) {
            return Error(400, "conflicting Content-Length");
          }
          seen_length = true;
          request->content_length = n;
        }
        break;
      case 17:
        if (EqualsIgnoreCase(name, "transfer-encoding")) {
          seen_encoding = true;
          chunked |= ListContains(value, "chunked");
        }
        break;
      default:
        break;
    }
  }
  if (p + 2 != end) return Error(400, "malformed header section");

  if (seen_encoding) {
    if (seen_length) return Error(400, "both Content-Length and Transfer-Encoding");
    if (chunked) return Error(411, "chunked request bodies are not accepted; send Content-Length");
    return Error(501, "unsupported transfer coding");
  }
  if (request->version_minor == 1 && hosts != 1) {
    return Error(400, hosts == 0 ? "missing Host header" : "more than one Host header");
  }
  if (request->content_length > limits_.max_body_bytes) return Error(413, "request body too large");
  if (connection_close) {
    request->keep_alive = false;
  } else if (request->version_minor == 0) {
    request->keep_alive = connection_keep_alive;
  }
  if (request->version_minor == 0) request->expect_continue = false;
  return ParseResult{};
}

}  // namespace rankd::http
