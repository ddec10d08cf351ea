// Router: maps method + path to a handler. Patterns are literal segments and `:name`
// parameters (`/users/:id/items/:item`); a parameter matches one non-empty segment and is
// returned by Request::Param. Routes are tried in the order they were added.
//
// Handlers are coroutines, `rt::Task<Response>(Request&)`, so they can await I/O (Redis, other
// services) on the connection's shard. A handler that never awaits can be added as a plain
// function returning Response: it runs without a coroutine frame.
//
// Resolution: a matching route answers; a path that matches under other methods only gives 405
// with an Allow header; HEAD is served by the GET route (the server drops the body, keeps its
// Content-Length); nothing matching gives 404.
//
// Errors of the server's own: what the server answers for a request no handler answers (404,
// 405), one it cannot take (400, 411, 413, 417, 431, 501, 505 from the parser), a handler that
// threw (500) and a connection over the shard's limit (503) is the router's ErrorResponder's
// response, so that whoever defines the routes defines the one shape of their errors too
// (rankd's service answers JSON error bodies). Without one, the message as plain text.
// Thread affinity: built on one thread before the server starts, then read concurrently by every
// shard (Dispatch is const and touches no shared mutable state). Ownership: owns its routes
// and handlers.
#pragma once

#include <concepts>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "rankd/http/request.h"
#include "rankd/http/response.h"
#include "rankd/runtime/task.h"

namespace rankd::http {

using AsyncHandler = std::function<rt::Task<Response>(Request&)>;
using SyncHandler = std::function<Response(Request&)>;
// The response to an error of the server's own: `status` (one of those above) and `message` (why,
// for a person) from the server; `request` is the parsed request (404, 405, 500), else null (the
// request could not be parsed, or there is none: a connection over the limit). Called from every
// shard at once, so it must be safe to call concurrently; it may throw (the server then answers
// the message as plain text). The server adds Allow to a 405 and Retry-After to its 503, and
// closes the connection after anything but a 404, 405 or 500.
using ErrorResponder =
    std::function<Response(int status, std::string_view message, const Request* request)>;

class Router {
 public:
  // Adds a route. Throws std::invalid_argument for a pattern that does not start with '/',
  // has an empty parameter name, or an empty method.
  template <class F>
  Router& Add(std::string method, std::string_view pattern, F&& handler) {
    if constexpr (std::is_invocable_r_v<rt::Task<Response>, F&, Request&>) {
      AddRoute(std::move(method), pattern, AsyncHandler(std::forward<F>(handler)), {});
    } else {
      static_assert(std::is_invocable_r_v<Response, F&, Request&>,
                    "a handler takes Request& and returns Response or rt::Task<Response>");
      AddRoute(std::move(method), pattern, {}, SyncHandler(std::forward<F>(handler)));
    }
    return *this;
  }
  template <class F>
  Router& Get(std::string_view pattern, F&& handler) {
    return Add("GET", pattern, std::forward<F>(handler));
  }
  template <class F>
  Router& Post(std::string_view pattern, F&& handler) {
    return Add("POST", pattern, std::forward<F>(handler));
  }

  // Sets how the server answers its own errors (see above).
  Router& OnError(ErrorResponder responder) {
    error_responder_ = std::move(responder);
    return *this;
  }
  // The response to an error of the server's own: the ErrorResponder's, or `message` as plain
  // text when there is none or it threw.
  Response ErrorResponse(int status, std::string_view message, const Request* request) const;

  // The outcome of matching a request: a route's handlers, or a status to answer with.
  struct Match {
    const AsyncHandler* async = nullptr;
    const SyncHandler* sync = nullptr;
    int status = 0;     // 404 or 405 when no handler matched
    std::string allow;  // 405: the methods the path accepts
  };
  // Matches `request` (method, path) and fills request->params. Const: safe from every shard.
  Match Resolve(Request* request) const;

  std::size_t size() const noexcept { return routes_.size(); }

 private:
  struct Segment {
    std::string text;  // literal text, or the parameter name
    bool parameter = false;
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<Segment> segments;
    AsyncHandler async;
    SyncHandler sync;
  };
  void AddRoute(std::string method, std::string_view pattern, AsyncHandler async, SyncHandler sync);
  static bool PathMatches(const Route& route, std::string_view path, Request* request);

  std::vector<Route> routes_;
  ErrorResponder error_responder_;
};

}  // namespace rankd::http
