// The HTTP server over real loopback sockets, on both reactor backends: keep-alive,
// pipelining, HEAD, Expect: 100-continue, every limit with its status, slow and vanishing
// clients, malformed requests, the router's error responder answering every error of the
// server's own, graceful drain, and curl as a real client.
#include "rankd/http/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "rankd/runtime/sleep.h"
#include "test_util.h"

namespace rankd::http {
namespace {

using namespace std::chrono_literals;
using rt::IoBackend;
using rt::testing::MillisSince;
using rt::testing::WaitFor;
using testing::ClientResponse;
using testing::Get;
using testing::Post;
using testing::TestClient;

class HttpServerTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::kIoUring && !rt::testing::IoUringAvailable()) {
      GTEST_SKIP() << "io_uring cannot be set up on this machine";
    }
  }

  // Options with short timeouts so the timeout tests stay fast.
  ServerOptions Options() const {
    ServerOptions o;
    o.header_timeout = 300ms;
    o.body_timeout = 300ms;
    o.idle_timeout = 2s;
    o.write_timeout = 2s;
    o.drain_grace = 3s;
    o.limits.max_body_bytes = 64 * 1024;
    return o;
  }

  Router Routes() {
    Router r;
    r.Get("/hello", [](Request&) { return Response::Static(200, "hello", "text/plain"); });
    r.Post("/echo", [this](Request& req) {
      echo_calls.fetch_add(1);
      return Response::Text(200, std::string(req.body));
    });
    r.Get("/users/:id",
          [](Request& req) { return Response::Text(200, "user " + std::string(req.Param("id"))); });
    r.Get("/users/:id/items/:item", [](Request& req) {
      return Response::Text(200,
                            std::string(req.Param("id")) + "/" + std::string(req.Param("item")));
    });
    r.Get("/slow", [this](Request&) -> rt::Task<Response> {
      slow_started.store(true);
      co_await rt::SleepFor(600ms);
      slow_finished.store(true);
      co_return Response::Static(200, "slow done", "text/plain");
    });
    r.Get("/very_slow", [this](Request&) -> rt::Task<Response> {
      slow_started.store(true);
      co_await rt::SleepFor(5s);
      slow_finished.store(true);
      co_return Response::Static(200, "very slow done", "text/plain");
    });
    r.Get("/big",
          [this](Request&) { return Response::Static(200, big_body, "application/octet-stream"); });
    r.Get("/throws", [](Request&) -> Response { throw std::runtime_error("handler failure"); });
    if (json_errors) {
      // What the service's responder does, in short: the status, the message and the request's
      // path (or "-" when it was not parsed) as a JSON body.
      r.OnError([](int status, std::string_view message, const Request* request) {
        return Response::Text(status,
                              "{\"status\":" + std::to_string(status) + ",\"message\":\"" +
                                  std::string(message) + "\",\"path\":\"" +
                                  (request != nullptr ? std::string(request->path) : "-") + "\"}",
                              "application/json");
      });
    }
    return r;
  }

  // Shards on the backend under test (not started).
  std::unique_ptr<rt::ShardSet> MakeShards(std::size_t count) const {
    rt::ShardOptions o;
    o.shards = count;
    o.loop.backend = GetParam();
    return std::make_unique<rt::ShardSet>(std::move(o));
  }
  std::uint16_t Start(ServerOptions options, std::size_t shard_count = 1) {
    shards = MakeShards(shard_count);
    server = std::make_unique<Server>(*shards, std::move(options), Routes());
    shards->Start();
    return server->port();
  }
  std::uint16_t Start() { return Start(Options()); }

  // Every response the server writes carries these.
  static void ExpectStandardHeaders(const ClientResponse& r) {
    EXPECT_TRUE(r.HasHeader("Content-Length")) << r.status;
    const std::string date = r.Header("Date");
    EXPECT_EQ(date.size(), 29u) << date;
    EXPECT_TRUE(date.ends_with(" GMT")) << date;
  }

  // Sends `bytes`, expects one error response with `status` and the connection closed.
  void ExpectRefused(std::uint16_t port, const std::string& bytes, int status,
                     std::string_view reason_part) {
    TestClient c;
    ASSERT_EQ(c.Connect(port), 0);
    ASSERT_TRUE(c.Send(bytes));
    const auto r = c.Read();
    ASSERT_TRUE(r.has_value()) << "no response to: " << bytes.substr(0, 80);
    EXPECT_EQ(r->status, status) << bytes.substr(0, 80);
    EXPECT_NE(r->body.find(reason_part), std::string::npos) << r->body;
    EXPECT_EQ(r->Header("Connection"), "close");
    ExpectStandardHeaders(*r);
    EXPECT_TRUE(c.WaitClosed()) << "the connection stays open after " << status;
  }

  bool json_errors = false;  // Routes() sets an error responder
  std::atomic<int> echo_calls{0};
  std::atomic<bool> slow_started{false};
  std::atomic<bool> slow_finished{false};
  std::string big_body = [] {
    std::string b(200 * 1024, '\0');
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>('a' + i % 26);
    return b;
  }();
  std::unique_ptr<rt::ShardSet> shards;  // declared first: outlives the server
  std::unique_ptr<Server> server;
};

std::string BackendName(const ::testing::TestParamInfo<IoBackend>& info) {
  return rt::IoBackendName(info.param);
}

TEST_P(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  for (int i = 0; i < 200; ++i) {
    const auto r = c.RoundTrip(Get("/users/" + std::to_string(i)));
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "user " + std::to_string(i));
    EXPECT_FALSE(r->HasHeader("Connection"));
    ExpectStandardHeaders(*r);
  }
  EXPECT_EQ(server->Stats().connections_accepted, 1u);
  EXPECT_EQ(server->Stats().requests, 200u);
}

TEST_P(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  std::string batch;
  for (int i = 0; i < 64; ++i) {
    batch += i % 3 == 0 ? Post("/echo", "body " + std::to_string(i))
                        : Get("/users/" + std::to_string(i));
  }
  ASSERT_TRUE(c.Send(batch));
  for (int i = 0; i < 64; ++i) {
    const auto r = c.Read();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, (i % 3 == 0 ? "body " : "user ") + std::to_string(i));
  }
  EXPECT_EQ(echo_calls.load(), 22);
  // The same pipeline written a byte at a time is answered the same.
  std::string one_by_one = Get("/users/a") + Post("/echo", "xyz") + Get("/hello");
  for (char ch : one_by_one) ASSERT_TRUE(c.Send(std::string_view(&ch, 1)));
  EXPECT_EQ(c.Read()->body, "user a");
  EXPECT_EQ(c.Read()->body, "xyz");
  EXPECT_EQ(c.Read()->body, "hello");
}

TEST_P(HttpServerTest, RoutesParametersNotFoundAndMethodNotAllowed) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  EXPECT_EQ(c.RoundTrip(Get("/users/42/items/7"))->body, "42/7");
  auto r = c.RoundTrip(Get("/nope"));
  EXPECT_EQ(r->status, 404);
  ExpectStandardHeaders(*r);
  r = c.RoundTrip(Post("/hello", "x"));
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("Allow"), "GET, HEAD");
  // A failing handler answers 500 and the connection goes on.
  r = c.RoundTrip(Get("/throws"));
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(c.RoundTrip(Get("/hello"))->body, "hello");
}

TEST_P(HttpServerTest, HeadAnswersTheGetHeadersWithoutABody) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  ASSERT_TRUE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  const auto r = c.Read(5s, /*head_request=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("Content-Length"), "5");
  // No body bytes: the next response follows the head directly.
  const auto next = c.RoundTrip(Get("/users/1"));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->body, "user 1");
}

TEST_P(HttpServerTest, ConnectionCloseAndHttp10EndTheConnectionAfterTheResponse) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  auto r = c.RoundTrip(Get("/hello", "Connection: close\r\n"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->Header("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());

  ASSERT_EQ(c.Connect(port), 0);
  r = c.RoundTrip("GET /hello HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());

  ASSERT_EQ(c.Connect(port), 0);
  r = c.RoundTrip("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(c.RoundTrip(Get("/hello"))->status, 200);
}

TEST_P(HttpServerTest, ExpectContinueGetsAnInterimResponseBeforeTheBody) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  ASSERT_TRUE(c.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 100);
  ASSERT_TRUE(c.Send("hello"));
  r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  // Too large with Expect: refused at once, the body is never sent.
  ExpectRefused(
      port,
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 70000\r\n\r\n",
      413, "too large");
}

TEST_P(HttpServerTest, LargeBodiesInBothDirections) {
  const auto port = Start();
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  const std::string body(60 * 1024, 'q');  // larger than the pooled read buffer
  auto r = c.RoundTrip(Post("/echo", body));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, body);
  r = c.RoundTrip(Get("/big"));  // sent from the route's storage, past the copy limit
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, big_body);
  EXPECT_EQ(c.RoundTrip(Get("/hello"))->body, "hello");
}

TEST_P(HttpServerTest, EachLimitAnswersItsStatus) {
  ServerOptions o = Options();
  o.limits.max_header_bytes = 4096;
  o.limits.max_headers = 20;
  o.limits.max_body_bytes = 1000;
  const auto port = Start(o);
  ExpectRefused(port, Get("/hello", "X-Big: " + std::string(5000, 'a') + "\r\n"), 431, "too large");
  // Without the blank line ever arriving: 431 as soon as the limit is crossed.
  ExpectRefused(port, "GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5000, 'a'), 431,
                "too large");
  std::string many;
  for (int i = 0; i < 25; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  ExpectRefused(port, Get("/hello", many), 431, "too many");
  ExpectRefused(port, Post("/echo", std::string(1001, 'b')), 413, "too large");
  ExpectRefused(
      port,
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      411, "chunked");
  EXPECT_EQ(echo_calls.load(), 0);
  // The server still serves after refusing.
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  EXPECT_EQ(c.RoundTrip(Post("/echo", std::string(1000, 'b')))->status, 200);
}

TEST_P(HttpServerTest, MalformedRequestsGet400WithAReason) {
  const auto port = Start();
  ExpectRefused(port, "GET /hello HTTP/1.1 extra\r\nHost: t\r\n\r\n", 400, "bad version");
  ExpectRefused(port, "GET\r\n\r\n", 400, "bad method");
  ExpectRefused(port, "GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400, "malformed request line");
  ExpectRefused(port, std::string("\x16\x03\x01\x00\xa5\x01\x00", 7), 400,
                "malformed request line");
  ExpectRefused(port, "GET /hello HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n", 400,
                "bad field name");
  ExpectRefused(port, "GET /hello HTTP/1.1\r\nHost: t\r\nX: 1\r\n folded\r\n\r\n", 400, "folding");
  ExpectRefused(port, "GET /hello HTTP/1.1\r\n\r\n", 400, "missing Host");
  ExpectRefused(port, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400,
                "Content-Length");
  ExpectRefused(port, "GET /hello HTTP/3.0\r\nHost: t\r\n\r\n", 505, "version");
  // After a good request on the same connection, a bad one still gets its 400 in order.
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  ASSERT_TRUE(c.Send(Get("/hello") + "BROKEN\r\n\r\n"));
  EXPECT_EQ(c.Read()->status, 200);
  EXPECT_EQ(c.Read()->status, 400);
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(server->Stats().bad_requests, 10u);
}

TEST_P(HttpServerTest, TheRoutersErrorResponderAnswersEveryErrorOfTheServersOwn) {
  json_errors = true;
  ServerOptions o = Options();
  o.limits.max_header_bytes = 4096;
  o.limits.max_body_bytes = 1000;
  const auto port = Start(o);
  // Refused before a request was parsed: no request, and the connection closes.
  ExpectRefused(port, "GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400,
                R"j({"status":400,"message":"malformed request line: bad version","path":"-"})j");
  ExpectRefused(port, Post("/echo", std::string(1001, 'b')), 413,
                R"j({"status":413,"message":"request body too large","path":"-"})j");
  ExpectRefused(port, Get("/hello", "X-Big: " + std::string(5000, 'a') + "\r\n"), 431,
                R"j({"status":431,"message":"request header fields too large","path":"-"})j");
  ExpectRefused(port, "GET /hello HTTP/3.0\r\nHost: t\r\n\r\n", 505, R"("status":505)");
  // No route, another method, a handler that threw: the request is known, the connection stays.
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  auto r = c.RoundTrip(Get("/nope"));
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->Header("Content-Type"), "application/json");
  EXPECT_EQ(r->body, R"j({"status":404,"message":"nothing is served at /nope","path":"/nope"})j");
  r = c.RoundTrip(Post("/hello", "x"));
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("Allow"), "GET, HEAD");
  EXPECT_EQ(r->body,
            R"j({"status":405,"message":"/hello does not accept POST (it accepts GET, HEAD)",)j"
            R"j("path":"/hello"})j");
  r = c.RoundTrip(Get("/throws"));
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, R"j({"status":500,"message":"internal error","path":"/throws"})j");
  EXPECT_FALSE(r->HasHeader("Connection"));
  EXPECT_EQ(c.RoundTrip(Get("/hello"))->body, "hello");
}

TEST_P(HttpServerTest, TheConnectionLimits503IsTheErrorRespondersWithRetryAfter) {
  json_errors = true;
  ServerOptions o = Options();
  o.max_connections_per_shard = 1;
  const auto port = Start(o);
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  EXPECT_EQ(c.RoundTrip(Get("/hello"))->body, "hello");
  // c holds the shard's one connection: the next is answered 503 with Retry-After.
  TestClient extra;
  ASSERT_EQ(extra.Connect(port), 0);
  const auto r = extra.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->Header("Content-Type"), "application/json");
  EXPECT_EQ(r->Header("Retry-After"), "1");
  EXPECT_EQ(r->Header("Connection"), "close");
  ExpectStandardHeaders(*r);
  EXPECT_EQ(r->body,
            R"j({"status":503,"message":"the server holds its limit of connections; retry later",)j"
            R"j("path":"-"})j");
  EXPECT_TRUE(extra.WaitClosed());
}

TEST_P(HttpServerTest, SlowlorisIsDroppedAtTheHeaderTimeoutWhileOthersAreServed) {
  const auto port = Start();  // one shard, 300 ms header timeout
  TestClient slow;
  ASSERT_EQ(slow.Connect(port), 0);
  const std::string request = Get("/hello", "X-Padding: " + std::string(100, 'p') + "\r\n");
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> dropped{false};
  double dropped_after_ms = 0;
  // One byte every 50 ms: the head would take seconds; the header timeout ends it first.
  std::thread slow_writer([&] {
    for (char ch : request) {
      if (!slow.Send(std::string_view(&ch, 1))) break;
      pollfd p{slow.fd(), POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) break;  // the server closed (EOF or reset)
    }
    dropped_after_ms = MillisSince(start);
    dropped.store(slow.WaitClosed(2s));
  });
  // Meanwhile another client is served promptly on the same (only) shard.
  TestClient fast;
  ASSERT_EQ(fast.Connect(port), 0);
  int served = 0;
  while (MillisSince(start) < 250) {
    const auto r = fast.RoundTrip(Get("/hello"));
    ASSERT_TRUE(r.has_value());
    ++served;
    std::this_thread::sleep_for(5ms);
  }
  slow_writer.join();
  EXPECT_TRUE(dropped.load());
  EXPECT_GE(dropped_after_ms, 250);
  EXPECT_LT(dropped_after_ms, 1500);
  EXPECT_GE(served, 3);
  EXPECT_EQ(server->Stats().connections_timed_out, 1u);
  EXPECT_EQ(fast.RoundTrip(Get("/hello"))->status, 200);
}

TEST_P(HttpServerTest, IdleAndBodyTimeoutsDropTheConnection) {
  ServerOptions o = Options();
  o.idle_timeout = 400ms;
  const auto port = Start(o);
  // Idle: a keep-alive connection with no next request. Each clock starts before the request
  // is sent, so a client that is scheduled late cannot make the server look early.
  TestClient idle;
  ASSERT_EQ(idle.Connect(port), 0);
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(idle.RoundTrip(Get("/hello"))->status, 200);
  EXPECT_TRUE(idle.WaitClosed(3s));
  EXPECT_GE(MillisSince(start), 300);
  // A connection that keeps making requests inside the idle timeout stays open.
  TestClient busy;
  ASSERT_EQ(busy.Connect(port), 0);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(busy.RoundTrip(Get("/hello"))->status, 200) << i;
    std::this_thread::sleep_for(100ms);
  }
  // Body: the head arrives, most of the body never does.
  TestClient stalled;
  ASSERT_EQ(stalled.Connect(port), 0);
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(stalled.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"));
  EXPECT_TRUE(stalled.WaitClosed(3s));
  EXPECT_GE(MillisSince(start), 250);
  EXPECT_EQ(echo_calls.load(), 0);
  EXPECT_GE(server->Stats().connections_timed_out, 2u);
}

TEST_P(HttpServerTest, ConnectionsBeyondTheShardLimitGet503) {
  ServerOptions o = Options();
  o.max_connections_per_shard = 3;
  const auto port = Start(o);
  std::vector<TestClient> clients(3);
  for (auto& c : clients) {
    ASSERT_EQ(c.Connect(port), 0);
    ASSERT_EQ(c.RoundTrip(Get("/hello"))->status, 200);
  }
  TestClient extra;
  ASSERT_EQ(extra.Connect(port), 0);
  const auto r = extra.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(r->HasHeader("Content-Length"));
  EXPECT_TRUE(extra.WaitClosed());
  EXPECT_EQ(server->Stats().connections_rejected, 1u);
  // A slot frees up when a client leaves.
  clients[0].Close();
  ASSERT_TRUE(WaitFor([&] { return server->Stats().connections_open == 2; }));
  ASSERT_EQ(extra.Connect(port), 0);
  EXPECT_EQ(extra.RoundTrip(Get("/hello"))->status, 200);
}

// A refused client that sent its requests at once still reads the 503: the server closes with
// those requests unread (a reset), and the response sent before the reset stays readable.
TEST_P(HttpServerTest, ARefusedClientThatAlreadySentItsRequestReadsThe503) {
  ServerOptions o = Options();
  o.max_connections_per_shard = 1;
  const auto port = Start(o);
  TestClient holder;
  ASSERT_EQ(holder.Connect(port), 0);
  ASSERT_EQ(holder.RoundTrip(Get("/hello"))->status, 200);
  for (int i = 0; i < 5; ++i) {
    TestClient extra;
    ASSERT_EQ(extra.Connect(port), 0);
    ASSERT_TRUE(extra.Send(Get("/hello") + Get("/hello")));
    std::this_thread::sleep_for(50ms);  // the server has refused and closed by now
    const auto r = extra.Read();
    ASSERT_TRUE(r.has_value()) << "attempt " << i;
    EXPECT_EQ(r->status, 503);
    EXPECT_TRUE(extra.WaitClosed());
  }
  EXPECT_EQ(server->Stats().connections_rejected, 5u);
  EXPECT_EQ(holder.RoundTrip(Get("/hello"))->status, 200);
}

TEST_P(HttpServerTest, ClientDisconnectingMidBodyRunsNoHandler) {
  const auto port = Start();
  for (int i = 0; i < 20; ++i) {
    TestClient c;
    ASSERT_EQ(c.Connect(port), 0);
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" +
                       std::string(1000 + i * 100, 'z')));
    if (i % 2 == 1) {
      const linger reset{1, 0};  // half of them vanish with a reset instead of a FIN
      ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    c.Close();
  }
  ASSERT_TRUE(WaitFor([&] { return server->Stats().connections_open == 0; }));
  EXPECT_EQ(echo_calls.load(), 0);
  TestClient c;
  ASSERT_EQ(c.Connect(port), 0);
  EXPECT_EQ(c.RoundTrip(Post("/echo", "fine"))->body, "fine");
}

TEST_P(HttpServerTest, DrainFinishesInFlightRequestsAndRefusesNewConnections) {
  const auto port = Start(Options(), 2);
  // An idle keep-alive connection on each shard (the kernel spreads them).
  std::vector<TestClient> idle(4);
  for (auto& c : idle) {
    ASSERT_EQ(c.Connect(port), 0);
    ASSERT_EQ(c.RoundTrip(Get("/hello"))->status, 200);
  }
  TestClient in_flight;
  ASSERT_EQ(in_flight.Connect(port), 0);
  ASSERT_TRUE(in_flight.Send(Get("/slow")));
  ASSERT_TRUE(WaitFor([&] { return slow_started.load(); }));

  const auto start = std::chrono::steady_clock::now();
  std::thread drainer([&] { server->Drain(); });
  ASSERT_TRUE(WaitFor([&] { return server->Stats().listening_shards == 0; }));
  // New connections are refused once every listener is closed.
  TestClient late;
  EXPECT_EQ(late.Connect(port), ECONNREFUSED);
  // Idle connections are closed at once, without waiting for the slow request.
  for (auto& c : idle) EXPECT_TRUE(c.WaitClosed(2s));
  EXPECT_FALSE(slow_finished.load());
  // The request in flight completes, told that the connection closes.
  const auto r = in_flight.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "slow done");
  EXPECT_EQ(r->Header("Connection"), "close");
  EXPECT_TRUE(in_flight.WaitClosed());
  drainer.join();
  EXPECT_LT(MillisSince(start), 2500);  // the slow request's 600 ms, inside the 3 s grace
}

TEST_P(HttpServerTest, DrainCancelsRequestsThatOutlastTheGrace) {
  ServerOptions o = Options();
  o.drain_grace = 100ms;
  const auto port = Start(o);
  TestClient in_flight;
  ASSERT_EQ(in_flight.Connect(port), 0);
  ASSERT_TRUE(in_flight.Send(Get("/very_slow")));  // takes 5 s
  ASSERT_TRUE(WaitFor([&] { return slow_started.load(); }));
  const auto start = std::chrono::steady_clock::now();
  server->Drain();
  EXPECT_LT(MillisSince(start), 2000);
  EXPECT_FALSE(slow_finished.load());
  EXPECT_TRUE(in_flight.WaitClosed());
}

// curl as a real client: GET, POST with a body, and a large POST (curl sends Expect:
// 100-continue for it).
std::string RunCurl(const std::string& args) {
  const std::string command = "/usr/bin/curl -sS --max-time 10 " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  char chunk[4096];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) out.append(chunk, n);
  const int status = ::pclose(pipe);
  if (status != 0) out += "\n[curl exit status " + std::to_string(status) + "]";
  return out;
}

TEST_P(HttpServerTest, CurlGetsAndPosts) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "/usr/bin/curl is not installed";
  const auto port = Start();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(RunCurl(base + "/users/curl"), "user curl");
  EXPECT_EQ(RunCurl("-d 'posted by curl' " + base + "/echo"), "posted by curl");
  const std::string headers = RunCurl("-i " + base + "/hello");
  EXPECT_NE(headers.find("HTTP/1.1 200 OK"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Content-Length: 5"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Date: "), std::string::npos) << headers;
  // 50 KB from a file: curl asks with Expect: 100-continue first.
  char path[] = "/tmp/rankd-http-curl-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string body(50 * 1000, 'c');
  ASSERT_EQ(::write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  ::close(fd);
  const std::string echoed = RunCurl("-H 'Expect: 100-continue' --data-binary @" +
                                     std::string(path) + " " + base + "/echo");
  ::unlink(path);
  EXPECT_EQ(echoed.size(), body.size());
  EXPECT_EQ(echoed, body);
  EXPECT_EQ(echo_calls.load(), 2);
}

// What a service puts on each shard (Redis pools, engine state) comes from a start hook on the
// shard's own loop; a handler finds its own shard's object, on its own thread.
TEST_P(HttpServerTest, EachHandlerSeesItsOwnShardsObject) {
  struct PerShard {
    std::size_t index;
    std::thread::id thread;
  };
  shards = MakeShards(2);
  rt::ShardLocal<PerShard> per_shard(*shards, [](rt::Shard& shard) {
    return std::make_unique<PerShard>(PerShard{shard.index, std::this_thread::get_id()});
  });
  std::atomic<int> mismatches{0};
  Router routes;
  routes.Get("/shard", [&](Request&) {
    const PerShard& mine = per_shard.Get();
    if (mine.thread != std::this_thread::get_id() ||
        mine.index != rt::ShardSet::CurrentIndex(*shards)) {
      mismatches.fetch_add(1);
    }
    return Response::Text(200, std::to_string(mine.index));
  });
  server = std::make_unique<Server>(*shards, Options(), std::move(routes));
  shards->Start();
  // 32 connections: the kernel spreads them over both shards (all on one: p = 2^-31).
  std::set<std::string> seen;
  for (int i = 0; i < 32; ++i) {
    TestClient c;
    ASSERT_EQ(c.Connect(server->port()), 0);
    const auto first = c.RoundTrip(Get("/shard"));
    ASSERT_TRUE(first.has_value());
    // A connection lives on one shard: every request on it sees the same object.
    for (int k = 0; k < 3; ++k) EXPECT_EQ(c.RoundTrip(Get("/shard"))->body, first->body);
    seen.insert(first->body);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_THROW(per_shard.Get(), std::logic_error);  // not a shard thread
  server.reset();
  shards->Stop();  // the objects go on their own loops, before per_shard does
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpServerTest,
                         ::testing::Values(IoBackend::kEpoll, IoBackend::kIoUring), BackendName);

}  // namespace
}  // namespace rankd::http
