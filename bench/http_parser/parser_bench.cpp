// Request parsing cost: rankd's RequestParser against Debian's http-parser (libhttp-parser,
// the Node.js parser), on the same requests, both collecting method, target, header name/value
// views and the body. Prints one line per request shape with ns per request for each and
// their ratio (http-parser / rankd: above 1 means rankd's parser is faster).
//
// Usage: rankd_http_parser_bench [--iterations N] (default 2,000,000 per shape).
#include <http_parser.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/http/request_parser.h"

namespace {

struct Shape {
  const char* name;
  std::string bytes;
};

std::vector<Shape> Shapes() {
  return {
      {"wrk GET /plaintext", "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"},
      {"curl GET",
       "GET /users/42?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: curl/7.88.1\r\n"
       "Accept: */*\r\n\r\n"},
      {"browser-like GET (10 headers)",
       "GET /api/v1/feed?cursor=abc&limit=20 HTTP/1.1\r\nHost: rank.example.com\r\n"
       "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)\r\n"
       "Accept: application/json, text/plain, */*\r\nAccept-Language: en-US,en;q=0.9\r\n"
       "Accept-Encoding: gzip, deflate, br\r\nReferer: https://example.com/home\r\n"
       "Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\nConnection: keep-alive\r\n"
       "Cache-Control: no-cache\r\nX-Request-Id: 7f3e2a10-9c1b-4c55-a0b2-8e8d3b6f4e21\r\n\r\n"},
      {"POST with 64-byte body",
       "POST /rank HTTP/1.1\r\nHost: rank\r\nContent-Type: application/json\r\nContent-Length: "
       "64\r\n\r\n" +
           std::string(64, 'x')},
  };
}

// http-parser with callbacks that record the same views RequestParser produces.
struct Collected {
  std::string_view target;
  std::string_view names[64];
  std::string_view values[64];
  int headers = 0;
  std::string_view body;
  bool complete = false;
};

int OnUrl(http_parser* p, const char* at, size_t n) {
  static_cast<Collected*>(p->data)->target = {at, n};
  return 0;
}
int OnField(http_parser* p, const char* at, size_t n) {
  auto* c = static_cast<Collected*>(p->data);
  if (c->headers < 64) c->names[c->headers] = {at, n};
  return 0;
}
int OnValue(http_parser* p, const char* at, size_t n) {
  auto* c = static_cast<Collected*>(p->data);
  if (c->headers < 64) c->values[c->headers++] = {at, n};
  return 0;
}
int OnBody(http_parser* p, const char* at, size_t n) {
  static_cast<Collected*>(p->data)->body = {at, n};
  return 0;
}
int OnComplete(http_parser* p) {
  static_cast<Collected*>(p->data)->complete = true;
  return 0;
}

double NanosPer(std::size_t n, std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
             .count() /
         static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t iterations = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--iterations N]\n", argv[0]);
      return 2;
    }
  }
  http_parser_settings settings;
  http_parser_settings_init(&settings);
  settings.on_url = OnUrl;
  settings.on_header_field = OnField;
  settings.on_header_value = OnValue;
  settings.on_body = OnBody;
  settings.on_message_complete = OnComplete;

  for (const Shape& shape : Shapes()) {
    rankd::http::RequestParser parser;
    rankd::http::Request request;
    std::size_t checksum = 0;
    auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iterations; ++i) {
      const auto r = parser.Parse(shape.bytes, &request);
      if (r.status != rankd::http::ParseStatus::kComplete) return 1;
      checksum += request.headers.size() + request.target.size() + request.body.size();
    }
    const double ours = NanosPer(iterations, start);

    Collected c;
    http_parser hp;
    start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iterations; ++i) {
      c = Collected{};
      http_parser_init(&hp, HTTP_REQUEST);
      hp.data = &c;
      const std::size_t used =
          http_parser_execute(&hp, &settings, shape.bytes.data(), shape.bytes.size());
      if (used != shape.bytes.size() || !c.complete) return 1;
      checksum -= static_cast<std::size_t>(c.headers) + c.target.size() + c.body.size();
    }
    const double theirs = NanosPer(iterations, start);
    std::printf("%-32s rankd %6.1f ns  http-parser %6.1f ns  ratio %.2fx%s\n", shape.name, ours,
                theirs, theirs / ours, checksum == 0 ? "" : "  (views differ!)");
  }
  return 0;
}
