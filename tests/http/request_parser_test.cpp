// RequestParser: complete, partial and pipelined requests, framing headers, limits and every
// error status with its reason.
#include "rankd/http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace rankd::http {
namespace {

ParseResult ParseAll(std::string_view bytes, Request* request, ParserLimits limits = {}) {
  RequestParser parser(limits);
  return parser.Parse(bytes, request);
}

void ExpectError(std::string_view bytes, int status, std::string_view reason_part,
                 ParserLimits limits = {}) {
  Request request;
  const ParseResult r = ParseAll(bytes, &request, limits);
  ASSERT_EQ(r.status, ParseStatus::kError) << bytes;
  EXPECT_EQ(r.error_status, status) << bytes;
  EXPECT_NE(r.reason.find(reason_part), std::string_view::npos) << r.reason;
}

TEST(RequestParserTest, ParsesAGetWithHeadersAndQuery) {
  const std::string bytes =
      "GET /users/7?x=1&y=2 HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent:  curl/7.88 \r\n"
      "Accept: */*\r\n\r\n";
  Request request;
  const ParseResult r = ParseAll(bytes, &request);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(r.consumed, bytes.size());
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/users/7?x=1&y=2");
  EXPECT_EQ(request.path, "/users/7");
  EXPECT_EQ(request.query, "x=1&y=2");
  EXPECT_EQ(request.version_minor, 1);
  ASSERT_EQ(request.headers.size(), 3u);
  EXPECT_EQ(request.Header("user-agent"), "curl/7.88");  // case-insensitive, OWS trimmed
  EXPECT_EQ(request.Header("HOST"), "localhost:8080");
  EXPECT_FALSE(request.HasHeader("content-length"));
  EXPECT_TRUE(request.keep_alive);
  EXPECT_TRUE(request.body.empty());
}

TEST(RequestParserTest, AHeadWithABareLfLineEndingIsRefusedAtOnce) {
  // The whole head with bare LFs, one bare LF after CRLF lines, and a bare LF in the blank line.
  ExpectError("POST /rank HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}", 400, "bare LF");
  ExpectError("GET / HTTP/1.1\r\nHost: x\nAccept: */*\r\n", 400, "bare LF");
  ExpectError("GET / HTTP/1.1\r\nHost: x\r\n\n", 400, "bare LF");
  // Arriving byte by byte, it is refused as soon as the LF is in; until then the parser waits.
  const std::string bytes = "GET / HTTP/1.1\r\nHost: x\n";
  RequestParser parser;
  Request request;
  for (std::size_t n = 1; n < bytes.size(); ++n) {
    ASSERT_EQ(parser.Parse(std::string_view(bytes).substr(0, n), &request).status,
              ParseStatus::kIncomplete)
        << n;
  }
  const ParseResult r = parser.Parse(bytes, &request);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_status, 400);
  // A CR split from its LF across reads is not a bare LF.
  RequestParser split;
  ASSERT_EQ(split.Parse("GET / HTTP/1.1\r", &request).status, ParseStatus::kIncomplete);
  EXPECT_EQ(split.Parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &request).status,
            ParseStatus::kComplete);
}

TEST(RequestParserTest, ParsesAContentLengthBody) {
  const std::string bytes = "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET";
  Request request;
  const ParseResult r = ParseAll(bytes, &request);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(request.body, "hello");
  EXPECT_EQ(r.consumed, bytes.size() - 3);  // the pipelined "GET" that follows is not consumed
}

TEST(RequestParserTest, ReportsTheSizeOfARequestWhoseBodyIsMissing) {
  const std::string head = "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n";
  Request request;
  RequestParser parser;
  ParseResult r = parser.Parse(head + "abc", &request);
  ASSERT_EQ(r.status, ParseStatus::kNeedBody);
  EXPECT_EQ(r.needed, head.size() + 10);
  const std::string whole = head + "abcdefghij";
  r = parser.Parse(whole, &request);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(request.body, "abcdefghij");
}

TEST(RequestParserTest, EverySplitPointOfTwoPipelinedRequestsParsesTheSame) {
  const std::string bytes =
      "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyzGET /b HTTP/1.1\r\nHost: "
      "h\r\n\r\n";
  for (std::size_t split = 0; split <= bytes.size(); ++split) {
    RequestParser parser;
    Request request;
    std::string fed = bytes.substr(0, split);
    ParseResult r = parser.Parse(fed, &request);
    if (r.status != ParseStatus::kComplete) {
      ASSERT_NE(r.status, ParseStatus::kError) << "split " << split;
      fed = bytes;
      r = parser.Parse(fed, &request);
    }
    ASSERT_EQ(r.status, ParseStatus::kComplete) << "split " << split;
    EXPECT_EQ(request.path, "/a");
    EXPECT_EQ(request.body, "xyz");
    // What arrived of the second request so far, then all of it.
    r = parser.Parse(std::string_view(fed).substr(r.consumed), &request);
    ASSERT_NE(r.status, ParseStatus::kError) << "split " << split;
    const std::string rest = bytes.substr(bytes.find("GET"));
    r = parser.Parse(rest, &request);
    ASSERT_EQ(r.status, ParseStatus::kComplete) << "split " << split;
    EXPECT_EQ(request.path, "/b");
    EXPECT_EQ(r.consumed, rest.size());
  }
}

TEST(RequestParserTest, AHeadArrivingByteByByteIsFoundOnce) {
  const std::string bytes = "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n";
  RequestParser parser;
  Request request;
  for (std::size_t n = 1; n < bytes.size(); ++n) {
    ASSERT_EQ(parser.Parse(std::string_view(bytes).substr(0, n), &request).status,
              ParseStatus::kIncomplete)
        << n;
  }
  EXPECT_EQ(parser.Parse(bytes, &request).status, ParseStatus::kComplete);
}

TEST(RequestParserTest, ConnectionSemanticsFollowTheVersion) {
  Request request;
  ASSERT_EQ(ParseAll("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", &request).status,
            ParseStatus::kComplete);
  EXPECT_FALSE(request.keep_alive);
  ASSERT_EQ(ParseAll("GET / HTTP/1.0\r\n\r\n", &request).status, ParseStatus::kComplete);
  EXPECT_FALSE(request.keep_alive);
  EXPECT_EQ(request.version_minor, 0);
  ASSERT_EQ(ParseAll("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &request).status,
            ParseStatus::kComplete);
  EXPECT_TRUE(request.keep_alive);
  ASSERT_EQ(
      ParseAll("GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade, close\r\n\r\n", &request).status,
      ParseStatus::kComplete);
  EXPECT_FALSE(request.keep_alive);
}

TEST(RequestParserTest, RecognisesExpectContinue) {
  Request request;
  const ParseResult r = ParseAll(
      "PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n", &request);
  ASSERT_EQ(r.status, ParseStatus::kNeedBody);
  EXPECT_TRUE(request.expect_continue);
  ExpectError("PUT /x HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\n\r\n", 417, "expectation");
}

TEST(RequestParserTest, RefusesMalformedRequestLines) {
  ExpectError("GET\r\n\r\n", 400, "bad method");
  ExpectError("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad target");
  ExpectError("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad version");
  ExpectError("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400, "bad version");
  ExpectError("GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400, "bad version");
  ExpectError("GET nopath HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad target");
  ExpectError("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad method");
  ExpectError("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "malformed request line");  // bare LF
  ExpectError("\r\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "malformed request line");
  ExpectError("\nGET / HT", 400, "empty line");
  ExpectError("\x16\x03\x01\x02", 400, "malformed request line");  // a TLS ClientHello
  ExpectError("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "version");
  ExpectError("GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505, "version");
}

// RFC 9112 section 2.2: empty lines before the request line are ignored.
TEST(RequestParserTest, IgnoresEmptyLinesBeforeTheRequestLine) {
  const std::string bytes = "\r\n\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\nGET";
  Request request;
  RequestParser parser;
  EXPECT_EQ(parser.Parse("\r", &request).status, ParseStatus::kIncomplete);
  EXPECT_EQ(parser.Parse("\r\nGET / HT", &request).status, ParseStatus::kIncomplete);
  const ParseResult r = parser.Parse(bytes, &request);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(request.path, "/a");
  EXPECT_EQ(r.consumed, bytes.size() - 3);
  const std::string post = "\r\nPOST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab";
  const ParseResult body = parser.Parse(post, &request);
  ASSERT_EQ(body.status, ParseStatus::kNeedBody);
  EXPECT_EQ(body.needed, post.size() + 2);
  // Blank lines only: still waiting, bounded by the head limit.
  ExpectError(std::string(100, '\n'), 400, "empty line");
  Request r2;
  RequestParser small({.max_header_bytes = 64});
  EXPECT_EQ(small.Parse(std::string(200, '\r') + "\n", &r2).status, ParseStatus::kError);
}

// The empty lines count towards the head's limit (the HTTP parser fuzzer found a head that fit
// the limit alone and passed it with the empty line before it).
TEST(RequestParserTest, EmptyLinesBeforeTheRequestLineCountTowardsTheHeadLimit) {
  const std::string head = "GET /a HTTP/1.1\r\nHost: " + std::string(26, 'h') + "\r\n\r\n";
  ASSERT_EQ(head.size(), 53u);
  Request request;
  RequestParser fits({.max_header_bytes = 56});
  const ParseResult alone = fits.Parse(head, &request);
  ASSERT_EQ(alone.status, ParseStatus::kComplete);
  const ParseResult one = fits.Parse("\r\n" + head, &request);
  ASSERT_EQ(one.status, ParseStatus::kComplete);  // 55 bytes
  EXPECT_EQ(one.consumed, 55u);
  const ParseResult two = fits.Parse("\r\n\r\n" + head, &request);  // 57 bytes
  ASSERT_EQ(two.status, ParseStatus::kError);
  EXPECT_EQ(two.error_status, 431);
  // Empty lines alone up to the limit: too large, not a wait for more.
  RequestParser tiny({.max_header_bytes = 4});
  const ParseResult lines = tiny.Parse("\r\n\r\n\r\nGET", &request);
  ASSERT_EQ(lines.status, ParseStatus::kError);
  EXPECT_EQ(lines.error_status, 431);
}

// RFC 9112 section 3.2.2: a server MUST accept the absolute form; it is served by its path.
TEST(RequestParserTest, ServesAnAbsoluteFormTargetByItsPathAndQuery) {
  Request request;
  std::string bytes;  // the request's views point into it
  const auto parse = [&](std::string_view target) {
    bytes = "GET " + std::string(target) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    return ParseAll(bytes, &request).status;
  };
  ASSERT_EQ(parse("http://example.com:8080/json?x=1"), ParseStatus::kComplete);
  EXPECT_EQ(request.path, "/json");
  EXPECT_EQ(request.query, "x=1");
  EXPECT_EQ(request.target, "http://example.com:8080/json?x=1");
  ASSERT_EQ(parse("http://example.com"), ParseStatus::kComplete);
  EXPECT_EQ(request.path, "/");
  ASSERT_EQ(parse("https://h?q"), ParseStatus::kComplete);
  EXPECT_EQ(request.path, "/");
  EXPECT_EQ(request.query, "q");
}

TEST(RequestParserTest, RefusesMalformedHeaders) {
  ExpectError("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400, "bad field name");
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400, "bad field name");
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n  folded\r\n\r\n", 400, "folding");
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400, "bad field value");
  ExpectError(std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 35), 400,
              "bad field value");
  // The value would end in a bare LF.
  ExpectError("GET / HTTP/1.1\r\nHost: h\nX: a\r\n\r\n", 400, "bare LF");
  ExpectError("GET / HTTP/1.1\r\n\r\n", 400, "missing Host");
  ExpectError("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host");
}

TEST(RequestParserTest, RefusesAmbiguousFraming) {
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400, "Content-Length");
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length");
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400,
              "Content-Length");
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
              "conflicting");
  ExpectError(
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
      "both");
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "chunked");
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
              "transfer coding");
  Request request;
  EXPECT_EQ(
      ParseAll("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
               &request)
          .status,
      ParseStatus::kComplete);
}

TEST(RequestParserTest, EnforcesItsLimits) {
  ParserLimits limits;
  limits.max_header_bytes = 256;
  limits.max_headers = 4;
  limits.max_body_bytes = 10;
  // A head without its blank line, as long as the limit: 431 without waiting for more.
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(256, 'a'), 431, "too large", limits);
  // A complete head, just over the limit.
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(230, 'a') + "\r\n\r\n", 431,
              "too large", limits);
  ExpectError("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431, "too many",
              limits);
  ExpectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", 413, "too large", limits);
  Request request;
  EXPECT_EQ(ParseAll("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", &request,
                     limits)
                .status,
            ParseStatus::kComplete);
  // Just under the header limit, still incomplete: keep reading.
  EXPECT_EQ(
      ParseAll("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(200, 'a'), &request, limits).status,
      ParseStatus::kIncomplete);
}

}  // namespace
}  // namespace rankd::http
