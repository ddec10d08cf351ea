// HttpResponseReader (bench/load/http_response_reader.h): the paced load client's reading of
// HTTP/1.1 responses, whole or in pieces, and the responses it refuses with a message.
#include "http_response_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace rankd::bench_load {
namespace {

using Result = HttpResponseReader::Result;

constexpr std::string_view kOverloaded =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    "Content-Length: 27\r\n\r\n{\"error\":{\"code\":\"over\"}}\r\n";

TEST(HttpResponseReader, ReadsAWholeResponseAndItsStatus) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed(kOverloaded), Result::kResponse);
  EXPECT_EQ(r.status(), 503);
  EXPECT_TRUE(r.keep_alive());
  EXPECT_TRUE(r.retry_after());
  EXPECT_EQ(r.Consume(), 0u);
  EXPECT_EQ(r.buffered(), 0u);
}

TEST(HttpResponseReader, ReadsAResponseFedOneByteAtATime) {
  HttpResponseReader r;
  for (std::size_t i = 0; i + 1 < kOverloaded.size(); ++i) {
    ASSERT_EQ(r.Feed(kOverloaded.substr(i, 1)), Result::kNeedMore) << "byte " << i;
  }
  ASSERT_EQ(r.Feed(kOverloaded.substr(kOverloaded.size() - 1)), Result::kResponse);
  EXPECT_EQ(r.status(), 503);
}

TEST(HttpResponseReader, ReadsConsecutiveResponsesOnOneConnection) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed(kOverloaded), Result::kResponse);
  EXPECT_TRUE(r.retry_after());
  EXPECT_EQ(r.Consume(), 0u);
  ASSERT_EQ(r.Feed("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"), Result::kResponse);
  EXPECT_EQ(r.status(), 200);
  EXPECT_FALSE(r.retry_after());  // the previous response's header is forgotten
  EXPECT_EQ(r.Consume(), 0u);
  ASSERT_EQ(r.Feed("HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\n\r\n"), Result::kResponse);
  EXPECT_EQ(r.status(), 504);
}

TEST(HttpResponseReader, CountsBytesAfterAResponse) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP"), Result::kResponse);
  EXPECT_EQ(r.Consume(), 4u);
}

TEST(HttpResponseReader, ShowsTheBodyOfAResponse) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed(kOverloaded), Result::kResponse);
  EXPECT_EQ(r.body(), "{\"error\":{\"code\":\"over\"}}\r\n");
}

TEST(HttpResponseReader, AZeroLengthBodyIsEmpty) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed("HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\n\r\n"), Result::kResponse);
  EXPECT_EQ(r.body(), "");
  HttpResponseReader no_content;
  ASSERT_EQ(no_content.Feed("HTTP/1.1 204 No Content\r\n\r\n"), Result::kResponse);
  EXPECT_EQ(no_content.body(), "");
}

TEST(HttpResponseReader, ShowsTheWholeBodyOfAResponseFedInPieces) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed("HTTP/1.1 200 OK\r\nContent-Le"), Result::kNeedMore);
  ASSERT_EQ(r.Feed("ngth: 15\r\n\r\n{\"degr"), Result::kNeedMore);
  ASSERT_EQ(r.Feed("aded\":"), Result::kNeedMore);
  ASSERT_EQ(r.Feed("[]}"), Result::kResponse);
  EXPECT_EQ(r.body(), "{\"degraded\":[]}");
}

// The body ends at its Content-Length, not at the bytes received; after Consume() the next
// response's body is shown.
TEST(HttpResponseReader, ShowsOnlyTheBodyOfTheResponseBeingRead) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n"),
            Result::kResponse);
  EXPECT_EQ(r.body(), "{}");
  EXPECT_EQ(r.Consume(), 17u);
  ASSERT_EQ(r.Feed("Content-Length: 5\r\n\r\n[1,2]"), Result::kResponse);
  EXPECT_EQ(r.body(), "[1,2]");
}

TEST(HttpResponseReader, ConnectionCloseAndHttp10EndTheConnection) {
  HttpResponseReader closing;
  ASSERT_EQ(
      closing.Feed("HTTP/1.1 503 x\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n"),
      Result::kResponse);
  EXPECT_FALSE(closing.keep_alive());
  HttpResponseReader http10;
  ASSERT_EQ(http10.Feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"), Result::kResponse);
  EXPECT_FALSE(http10.keep_alive());
  HttpResponseReader http10_kept;
  ASSERT_EQ(
      http10_kept.Feed("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"),
      Result::kResponse);
  EXPECT_TRUE(http10_kept.keep_alive());
}

TEST(HttpResponseReader, NoContentNeedsNoLength) {
  HttpResponseReader r;
  ASSERT_EQ(r.Feed("HTTP/1.1 204 No Content\r\n\r\n"), Result::kResponse);
  EXPECT_EQ(r.status(), 204);
}

// Each malformed response gives kError and a message naming what was wrong; the reader stays
// failed.
TEST(HttpResponseReader, RefusesWhatItCannotFrameWithAMessage) {
  const struct {
    std::string_view bytes;
    std::string_view message_part;
  } cases[] = {
      {"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", "malformed status line 'HTTP/1.1 2x0 OK'"},
      {"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "malformed status line"},
      {"HTTP/1.1 100 Continue\r\n\r\n", "interim response 100"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n", "malformed header line"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "bad Content-Length '12a'"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       "two different Content-Length"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding 'chunked'"},
      {"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n", "status 200 without Content-Length"},
  };
  for (const auto& c : cases) {
    HttpResponseReader r;
    EXPECT_EQ(r.Feed(c.bytes), Result::kError) << c.bytes;
    EXPECT_NE(r.error().find(c.message_part), std::string::npos) << r.error();
    EXPECT_EQ(r.Feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), Result::kError);
  }
}

TEST(HttpResponseReader, RefusesHeadersOverTheLimit) {
  HttpResponseReader r;
  const std::string head =
      "HTTP/1.1 200 OK\r\nX: " + std::string(HttpResponseReader::kMaxHeadBytes, 'a');
  EXPECT_EQ(r.Feed(head), Result::kError);
  EXPECT_NE(r.error().find("exceed"), std::string::npos) << r.error();
  HttpResponseReader complete_but_long;
  EXPECT_EQ(complete_but_long.Feed(head + "\r\n\r\n"), Result::kError);
}

}  // namespace
}  // namespace rankd::bench_load
