// RequestParser: HTTP/1.1 request framing and parsing (RFC 9112), the one place where request
// bytes are interpreted. The server, the tests and the fuzzer all go through Parse().
//
// Feed it the unconsumed bytes of a connection, starting at the next request; it answers with
//   kIncomplete  the head is not complete yet: read more and call again with all the bytes;
//   kNeedBody    the head is complete and valid, the body is not all there: `needed` is the
//                total size the request occupies (head + body), so the caller can size its
//                buffer, answer `Expect: 100-continue`, and call again once it has `needed`;
//   kComplete    one request: `request` is filled (views into `bytes`), `consumed` is its size;
//                the bytes after it are the next (pipelined) request;
//   kError       the request is unacceptable: `status` (400, 411, 413, 417, 431, 501, 505) and
//                a short `reason` for the response; the connection must be closed after it.
// Request bodies are framed by Content-Length only: `Transfer-Encoding: chunked` is refused
// with 411 (Length Required), any other transfer coding with 501.
//
// Parsing is strict where laxness enables request smuggling: lines end in CRLF, no whitespace
// before a header's colon, no obsolete line folding, Content-Length must be digits and agree
// with any repeat, Content-Length and Transfer-Encoding together are refused, and an HTTP/1.1
// request needs exactly one Host.
//
// Between calls for the same request the parser remembers how far it already searched for the
// end of the head, so a head arriving a byte at a time costs linear, not quadratic, time. Call
// Reset() before feeding bytes of an unrelated stream.
// Thread affinity: one connection's thread. Ownership: owns nothing but its limits and scan
// position; the Request it fills borrows `bytes`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rankd/http/request.h"

namespace rankd::http {

struct ParserLimits {
  // Request line + headers + the blank line: beyond it, 431.
  std::size_t max_header_bytes = 16 * 1024;
  // Header fields per request: beyond it, 431.
  std::size_t max_headers = 100;
  // Content-Length above it: 413.
  std::uint64_t max_body_bytes = 1024 * 1024;
};

enum class ParseStatus { kIncomplete, kNeedBody, kComplete, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  std::size_t consumed = 0;  // kComplete: bytes of this request (head + body)
  std::size_t needed = 0;    // kNeedBody: bytes the whole request occupies
  int error_status = 0;      // kError: the status to answer with
  std::string_view reason;   // kError: what was wrong, a static string
};

class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits = {}) noexcept : limits_(limits) {}

  ParseResult Parse(std::string_view bytes, Request* request) {
    if (bytes.empty() || bytes[0] != '\r') [[likely]]
      return ParseRequest(bytes, request, limits_.max_header_bytes);
    return ParseAfterEmptyLines(bytes, request);
  }
  void Reset() noexcept { scanned_ = 0; }

  const ParserLimits& limits() const noexcept { return limits_; }

 private:
  // Parse, for bytes that start with a CR: skips the empty lines before the request line.
  ParseResult ParseAfterEmptyLines(std::string_view bytes, Request* request);
  // Parse without the empty lines before the request line, whose head may be at most
  // `max_head_bytes` (the limit less the empty lines skipped).
  ParseResult ParseRequest(std::string_view bytes, Request* request, std::size_t max_head_bytes);
  // Parses a complete head (ending with the blank line, `head` includes it).
  ParseResult ParseHead(std::string_view head, Request* request) const;

  ParserLimits limits_;
  std::size_t scanned_ = 0;  // bytes already searched for the end of the head
};

}  // namespace rankd::http
