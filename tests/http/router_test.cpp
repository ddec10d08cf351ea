// Router: literal and parameter segments, order, 404/405 with Allow, HEAD served by GET, bad
// patterns, the error responder; DateCache's IMF-fixdate.
#include "rankd/http/router.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "rankd/http/date_cache.h"

namespace rankd::http {
namespace {

Request Make(std::string_view method, std::string_view path) {
  Request r;
  r.method = method;
  r.path = path;
  return r;
}

int Call(const Router::Match& m, Request& r) {
  return m.sync != nullptr ? (*m.sync)(r).status() : -1;
}

TEST(RouterTest, MatchesLiteralAndParameterSegments) {
  Router router;
  router.Get("/", [](Request&) { return Response(201); });
  router.Get("/users/:id", [](Request&) { return Response(202); });
  router.Get("/users/:id/items/:item", [](Request&) { return Response(203); });
  router.Get("/users/me", [](Request&) { return Response(204); });  // shadowed by :id (order)

  Request r = Make("GET", "/");
  EXPECT_EQ(Call(router.Resolve(&r), r), 201);
  r = Make("GET", "/users/7");
  EXPECT_EQ(Call(router.Resolve(&r), r), 202);
  EXPECT_EQ(r.Param("id"), "7");
  r = Make("GET", "/users/me");
  EXPECT_EQ(Call(router.Resolve(&r), r), 202);
  r = Make("GET", "/users/7/items/x-1");
  EXPECT_EQ(Call(router.Resolve(&r), r), 203);
  EXPECT_EQ(r.Param("id"), "7");
  EXPECT_EQ(r.Param("item"), "x-1");
  EXPECT_EQ(r.Param("missing"), "");
  for (std::string_view miss : {"/users", "/users/", "/users/7/", "/users/7/items", "//", "/x"}) {
    r = Make("GET", miss);
    const Router::Match m = router.Resolve(&r);
    EXPECT_EQ(m.status, 404) << miss;
    EXPECT_TRUE(r.params.empty()) << miss;
  }
}

TEST(RouterTest, WrongMethodGives405WithAllowAndHeadUsesGet) {
  Router router;
  router.Get("/a", [](Request&) { return Response(200); });
  router.Post("/a", [](Request&) { return Response(201); });
  router.Add("DELETE", "/b/:id", [](Request&) -> rt::Task<Response> { co_return Response(204); });
  Request r = Make("PUT", "/a");
  Router::Match m = router.Resolve(&r);
  EXPECT_EQ(m.status, 405);
  EXPECT_EQ(m.allow, "GET, HEAD, POST");
  r = Make("HEAD", "/a");
  EXPECT_EQ(Call(router.Resolve(&r), r), 200);
  r = Make("DELETE", "/b/9");
  m = router.Resolve(&r);
  ASSERT_NE(m.async, nullptr);
  EXPECT_EQ(r.Param("id"), "9");
  r = Make("GET", "/b/9");
  EXPECT_EQ(router.Resolve(&r).allow, "DELETE");
}

TEST(RouterTest, RejectsBadPatterns) {
  Router router;
  auto handler = [](Request&) { return Response(200); };
  EXPECT_THROW(router.Get("users", handler), std::invalid_argument);
  EXPECT_THROW(router.Get("", handler), std::invalid_argument);
  EXPECT_THROW(router.Get("/users/:", handler), std::invalid_argument);
  EXPECT_THROW(router.Add("", "/x", handler), std::invalid_argument);
  EXPECT_EQ(router.size(), 0u);
}

TEST(RouterTest, ErrorResponsesAreTheRespondersOrElsePlainText) {
  Router plain;
  Response r = plain.ErrorResponse(404, "nothing is served at /x", nullptr);
  EXPECT_EQ(r.status(), 404);
  EXPECT_EQ(r.content_type(), "text/plain; charset=utf-8");
  EXPECT_EQ(r.body(), "nothing is served at /x");

  Router json;
  json.OnError([](int status, std::string_view message, const Request* request) {
    return Response::Text(status,
                          std::to_string(status) + "|" + std::string(message) + "|" +
                              (request != nullptr ? std::string(request->path) : "-"),
                          "application/json");
  });
  Request req = Make("GET", "/x");
  r = json.ErrorResponse(404, "nothing", &req);
  EXPECT_EQ(r.content_type(), "application/json");
  EXPECT_EQ(r.body(), "404|nothing|/x");
  EXPECT_EQ(json.ErrorResponse(400, "bad", nullptr).body(), "400|bad|-");

  // A responder that throws: the message as plain text after all.
  Router failing;
  failing.OnError(
      [](int, std::string_view, const Request*) -> Response { throw std::runtime_error("no"); });
  r = failing.ErrorResponse(431, "too large", nullptr);
  EXPECT_EQ(r.status(), 431);
  EXPECT_EQ(r.body(), "too large");
}

TEST(DateCacheTest, FormatsImfFixdate) {
  DateCache cache;
  EXPECT_EQ(cache.Get(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(cache.Get(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(cache.Get(1709251199), "Thu, 29 Feb 2024 23:59:59 GMT");
  EXPECT_EQ(cache.Now().size(), DateCache::kLength);
}

}  // namespace
}  // namespace rankd::http
