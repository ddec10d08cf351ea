#include "rankd/http/router.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "rankd/runtime/log.h"

namespace rankd::http {

Response Router::ErrorResponse(int status, std::string_view message, const Request* request) const {
  if (error_responder_) {
    try {
      return error_responder_(status, message, request);
    } catch (const std::exception& e) {
      rt::LogLine("rankd http: the error responder failed for a " + std::to_string(status) + ": " +
                  e.what());
    }
  }
  return Response::Text(status, std::string(message));
}

void Router::AddRoute(std::string method, std::string_view pattern, AsyncHandler async,
                      SyncHandler sync) {
  if (method.empty()) throw std::invalid_argument("route method is empty");
  if (pattern.empty() || pattern.front() != '/') {
    throw std::invalid_argument("route pattern '" + std::string(pattern) + "' must start with '/'");
  }
  Route route;
  route.method = std::move(method);
  route.pattern = std::string(pattern);
  std::string_view rest = pattern.substr(1);
  for (;;) {
    const std::size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    if (!segment.empty() && segment.front() == ':') {
      if (segment.size() == 1) {
        throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                    "' has a parameter without a name");
      }
      route.segments.push_back({std::string(segment.substr(1)), true});
    } else {
      route.segments.push_back({std::string(segment), false});
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  route.async = std::move(async);
  route.sync = std::move(sync);
  routes_.push_back(std::move(route));
}

bool Router::PathMatches(const Route& route, std::string_view path, Request* request) {
  if (path.empty() || path.front() != '/') return false;
  std::string_view rest = path.substr(1);
  const std::size_t params_before = request->params.size();
  for (std::size_t i = 0; i < route.segments.size(); ++i) {
    const std::size_t slash = rest.find('/');
    const bool last = i + 1 == route.segments.size();
    // The final segment must take the rest of the path; earlier ones need a following slash.
    if (last != (slash == std::string_view::npos)) break;
    const std::string_view segment = rest.substr(0, slash);
    const Segment& s = route.segments[i];
    if (s.parameter) {
      if (segment.empty()) break;
      request->params.push_back({s.text, segment});
    } else if (segment != s.text) {
      break;
    }
    if (last) return true;
    rest.remove_prefix(slash + 1);
  }
  request->params.resize(params_before);
  return false;
}

Router::Match Router::Resolve(Request* request) const {
  Match match;
  const bool head = request->method == "HEAD";
  for (const Route& route : routes_) {
    const bool method_ok = route.method == request->method || (head && route.method == "GET");
    if (!method_ok) continue;
    if (PathMatches(route, request->path, request)) {
      if (route.async) {
        match.async = &route.async;
      } else {
        match.sync = &route.sync;
      }
      return match;
    }
  }
  // No route for this method: 405 if the path exists under other methods.
  for (const Route& route : routes_) {
    if (PathMatches(route, request->path, request)) {
      request->params.clear();
      if (match.allow.find(route.method) == std::string::npos) {
        if (!match.allow.empty()) match.allow += ", ";
        match.allow += route.method;
        if (route.method == "GET" && match.allow.find("HEAD") == std::string::npos) {
          match.allow += ", HEAD";
        }
      }
    }
  }
  match.status = match.allow.empty() ? 404 : 405;
  return match;
}

}  // namespace rankd::http
