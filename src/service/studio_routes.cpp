// The studio's routes of RankService (docs/studio.md): the page's files, a plan's analysis, the
// comparison of two plans on one request, and the last plan build's result.
#include <algorithm>
#include <charconv>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/experiments/ranking_diff.h"
#include "rankd/engine/experiments/response_ranking.h"
#include "rankd/engine/json/json_text.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/service/http_errors.h"
#include "rankd/service/query_string.h"
#include "rankd/service/rank_service.h"
#include "rankd/service/studio_assets.h"

namespace rankd::service {
namespace {

constexpr std::string_view kJson = "application/json";
// The page loads its own files only; dagre's layout is drawn as SVG with style attributes.
constexpr std::string_view kPagePolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'";
// What `rankc build --watch` may report: its diagnostics, far below this.
constexpr std::size_t kMaxBuildReportBytes = 1 << 20;
constexpr std::size_t kMaxCompareK = 1000;

// Whether an If-None-Match header (a list of entity tags, or *) matches `etag`.
bool EtagMatches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const std::size_t comma = if_none_match.find(',');
    std::string_view tag = if_none_match.substr(0, comma);
    if_none_match =
        comma == std::string_view::npos ? std::string_view() : if_none_match.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

// The key an output node orders its rows by (topk's and sort's `by`), which the diff reads as the
// score; empty for an output that orders by no key.
std::string_view ScoreKey(const engine::CompiledPlan& plan, const engine::CompiledNode& node) {
  const engine::KeyRef* key = engine::OrderingKey(node);
  if (key == nullptr) return {};
  return plan.registry().keys()[key->slot].name;
}

// The ranking diff of each output of A against B's output at the same position, as a JSON
// array; an output pair whose rows cannot be read or diffed has an `error` instead of `diff`.
void WriteDiffOutputs(engine::json::JsonWriter& w, const engine::Ranker::Answer& a,
                      const engine::Ranker::Answer& b, std::size_t k) {
  namespace ex = engine::experiments;
  w.BeginArray();
  if (a.error || b.error || !a.compiled || !b.compiled) {
    w.EndArray();
    return;
  }
  const engine::CompiledPlan& plan_a = *a.compiled;
  const engine::CompiledPlan& plan_b = *b.compiled;
  const std::size_t pairs = std::min(plan_a.outputs().size(), plan_b.outputs().size());
  for (std::size_t i = 0; i < pairs; ++i) {
    const engine::CompiledNode& node_a = plan_a.nodes()[plan_a.outputs()[i]];
    const engine::CompiledNode& node_b = plan_b.nodes()[plan_b.outputs()[i]];
    w.BeginObject().Member("output_a", node_a.node->id).Member("output_b", node_b.node->id);
    auto list_a = ex::RankedListOfResponse(a.body, node_a.node->id, ScoreKey(plan_a, node_a));
    auto list_b = ex::RankedListOfResponse(b.body, node_b.node->id, ScoreKey(plan_b, node_b));
    std::expected<ex::RankingDiff, std::string> diff =
        !list_a ? std::unexpected("A: " + list_a.error())
        : !list_b
            ? std::unexpected("B: " + list_b.error())
            : ex::DiffRankings(*list_a, *list_b, ex::RankingDiffOptions{.k = k, .rbo_p = 0.9});
    if (diff) {
      w.Key("diff");
      ex::WriteRankingDiffJson(w, *diff);
    } else {
      w.Member("error", diff.error());
    }
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

void RankService::AddStudioRoutes(http::Router& router) {
  router.Get("/studio", [this](http::Request& request) {
    if (auto refusal = StudioRefusal(request)) return std::move(*refusal);
    return StudioFile(request, "index.html");
  });
  router.Get("/studio/:file", [this](http::Request& request) {
    if (auto refusal = StudioRefusal(request)) return std::move(*refusal);
    return StudioFile(request, request.Param("file"));
  });
  router.Get("/studio/api/plan/:name", [this](http::Request& request) {
    if (auto refusal = StudioRefusal(request)) return std::move(*refusal);
    return StudioPlan(request);
  });
  router.Post("/studio/api/compare",
              [this](http::Request& request) { return StudioCompare(request); });
  router.Get("/studio/api/build", [this](http::Request& request) {
    if (auto refusal = StudioRefusal(request)) return std::move(*refusal);
    return StudioBuild();
  });
  router.Post("/studio/api/build", [this](http::Request& request) {
    if (auto refusal = StudioRefusal(request)) return std::move(*refusal);
    return StudioBuildReport(request);
  });
}

std::optional<http::Response> RankService::StudioRefusal(const http::Request& request) const {
  if (options_.studio == StudioAccess::kAny || request.PeerIsLoopback()) return std::nullopt;
  return JsonError(engine::ErrorCode::kForbidden,
                   "the studio is served to loopback peers only (rankd serve --studio any opens "
                   "it to every peer)");
}

http::Response RankService::StudioFile(const http::Request& request, std::string_view name) const {
  const StudioAsset* asset = FindStudioAsset(name);
  if (asset == nullptr) {
    return JsonError(engine::ErrorCode::kNotFound,
                     "the studio has no file " + engine::json::QuoteJson(name));
  }
  // A file fetched by its digest (index.html names each so) never changes under that URL;
  // anything else is revalidated against its ETag, the page first.
  bool by_digest = false;
  for (const auto& [query_name, value] : SplitQuery(request.query)) {
    by_digest = by_digest || (query_name == "v" && value == asset->digest);
  }
  const std::string etag = "\"" + std::string(asset->digest) + "\"";
  const bool fresh = EtagMatches(request.Header("if-none-match"), etag);
  http::Response response =
      fresh ? http::Response(304) : http::Response::Static(200, asset->bytes, asset->content_type);
  response.AddHeader("ETag", etag);
  response.AddHeader("Cache-Control", by_digest && name != "index.html"
                                          ? "public, max-age=31536000, immutable"
                                          : "no-cache");
  response.AddHeader("X-Content-Type-Options", "nosniff");
  if (name == "index.html") response.AddHeader("Content-Security-Policy", std::string(kPagePolicy));
  return response;
}

http::Response RankService::StudioPlan(const http::Request& request) const {
  const std::shared_ptr<const engine::CompiledPlanStore> current = store();
  const std::string_view name = request.Param("name");
  const std::shared_ptr<const engine::CompiledPlan> compiled = current->Find(name);
  if (!compiled) {
    return JsonError(engine::ErrorCode::kUnknownPlan,
                     "no plan " + engine::json::QuoteJson(name) + " in the plan store");
  }
  const engine::Plan& plan = compiled->plan();
  const engine::Registry& registry = compiled->registry();
  std::string body;
  engine::json::JsonWriter w(body);
  w.BeginObject().Member("name", plan.name).Member("digest", plan.digest);
  w.Key("nodes").BeginArray();
  for (const engine::CompiledNode& node : compiled->nodes()) {
    w.BeginObject().Member("id", node.node->id).Member("op", engine::OpName(node.node->op));
    w.Key("output_keys").BeginArray();
    for (const engine::KeyRef& key : node.output_keys) w.String(registry.keys()[key.slot].name);
    w.EndArray().Key("keys_added").BeginArray();
    for (const engine::KeyRef& key : engine::AddedKeys(*compiled, node)) {
      w.String(registry.keys()[key.slot].name);
    }
    w.EndArray();
    w.Key("max_rows").Uint(node.node->max_rows);
    w.Key("max_redis_commands").Uint(node.node->max_redis_commands);
    w.Member("output", node.is_output).EndObject();
  }
  w.EndArray().EndObject();
  return http::Response::Text(200, std::move(body), kJson);
}

rt::Task<http::Response> RankService::StudioCompare(http::Request& request) {
  if (auto refusal = StudioRefusal(request)) co_return std::move(*refusal);
  std::string_view against;
  std::size_t k = 10;
  for (const auto& [name, value] : SplitQuery(request.query)) {
    if (name == "against") {
      against = value;
    } else if (name == "k") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), k);
      if (ec != std::errc() || end != value.data() + value.size() || k < 1 || k > kMaxCompareK) {
        co_return JsonError(engine::ErrorCode::kBadRequest,
                            "k must be an integer from 1 to " + std::to_string(kMaxCompareK) +
                                ", got " + engine::json::QuoteJson(value));
      }
    } else {
      co_return JsonError(engine::ErrorCode::kBadRequest,
                          "unknown query parameter " + engine::json::QuoteJson(name) +
                              " (POST /studio/api/compare takes against and k)");
    }
  }
  if (against.empty()) {
    co_return JsonError(engine::ErrorCode::kBadRequest,
                        "POST /studio/api/compare needs ?against=<plan>: the plan B that answers "
                        "the same request");
  }
  if (!store()->Find(against)) {
    co_return JsonError(engine::ErrorCode::kUnknownPlan,
                        "no plan " + engine::json::QuoteJson(against) + " in the plan store");
  }
  // A as the request asks, then B: the same request answered by `against` (as a replay does).
  const engine::Ranker::Answer a = co_await RankOnShard(request.body, {});
  engine::Ranker::Context context_b;
  context_b.plan_override = against;
  const engine::Ranker::Answer b = co_await RankOnShard(request.body, context_b);
  // A's and B's answers are JSON already: written as they are.
  std::string body;
  engine::json::JsonWriter w(body);
  w.BeginObject().Member("against", against).Key("k").Uint(k);
  w.Key("a").Raw(a.body).Key("b").Raw(b.body).Key("diffs");
  WriteDiffOutputs(w, a, b, k);
  w.EndObject();
  co_return http::Response::Text(200, std::move(body), kJson);
}

http::Response RankService::StudioBuild() const {
  std::lock_guard lock(studio_mutex_);
  if (build_report_.empty()) {
    return http::Response::Static(200, R"({"state":"none","at":null,"diagnostics":[]})", kJson);
  }
  return http::Response::Text(200, build_report_, kJson);
}

http::Response RankService::StudioBuildReport(const http::Request& request) {
  // The report changes what every viewer of the page sees: only the machine's own rankc.
  if (!request.PeerIsLoopback()) {
    return JsonError(engine::ErrorCode::kForbidden,
                     "POST /studio/api/build is accepted from loopback only");
  }
  if (request.body.size() > kMaxBuildReportBytes) {
    return JsonError(engine::ErrorCode::kBadRequest,
                     "a build report is at most " + std::to_string(kMaxBuildReportBytes) +
                         " bytes, got " + std::to_string(request.body.size()));
  }
  if (std::optional<std::string> problem = engine::json::JsonSyntaxError(request.body)) {
    return JsonError(engine::ErrorCode::kBadRequest, "the build report is not JSON: " + *problem);
  }
  {
    std::lock_guard lock(studio_mutex_);
    build_report_ = request.body;
  }
  return http::Response::Static(200, R"({"stored":true})", kJson);
}

}  // namespace rankd::service
