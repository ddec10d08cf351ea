#include "rankd/service/openapi.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <variant>
#include <vector>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/json/json_text.h"
#include "openapi_request.gen.h"
#include "rankd/service/http_errors.h"

namespace rankd::service {

namespace {

using engine::json::AppendJsonString;
using engine::json::QuoteJson;

std::string Ref(std::string_view schema) {
  return "{\"$ref\":" + QuoteJson("#/components/schemas/" + std::string(schema)) + "}";
}

// A response object: `description` and, unless empty, `content` (a media type map).
std::string Response(std::string_view description, std::string_view content) {
  std::string out = "{\"description\":" + QuoteJson(description);
  if (!content.empty()) out += ",\"content\":" + std::string(content);
  return out + "}";
}

std::string Json(std::string_view schema) {
  return "{\"application/json\":{\"schema\":" + std::string(schema) + "}}";
}

constexpr std::string_view kPlainText = R"({"text/plain":{"schema":{"type":"string"}}})";

// A /rank error answer whose code is one of `codes`.
std::string RankErrorWith(std::initializer_list<std::string_view> codes) {
  std::string list;
  for (const std::string_view code : codes) list += (list.empty() ? "" : ",") + QuoteJson(code);
  return R"({"allOf":[)" + Ref("RankError") +
         R"(,{"properties":{"error":{"properties":{"code":{"enum":[)" + list + "]}}}}}]}";
}

std::string RankErrorWith(engine::ErrorCode code) {
  return RankErrorWith({engine::WireName(code)});
}

// A plain service error (the endpoints other than /rank) with code `code`.
std::string ServiceErrorWith(engine::ErrorCode code) {
  return R"({"allOf":[)" + Ref("ServiceError") +
         R"(,{"properties":{"error":{"properties":{"code":{"const":)" +
         QuoteJson(engine::WireName(code)) + "}}}}}]}";
}

// An error of the HTTP layer's own (request_id when the request had a valid X-Request-Id) with
// the code of `status`.
std::string HttpErrorWith(int status) {
  const engine::ErrorCode code = HttpLayerErrorCode(status).value_or(engine::ErrorCode::kInternal);
  return R"({"allOf":[)" + Ref("HttpError") +
         R"(,{"properties":{"error":{"properties":{"code":{"const":)" +
         QuoteJson(engine::WireName(code)) + "}}}}}]}";
}

// What the HTTP layer answers on its own (docs/http.md, docs/operations.md "Errors"), in the
// order of their statuses: each is listed under components.responses, and those any request of
// an operation may get are in the operation's responses too.
struct HttpLayerError {
  int status;
  std::string_view name;  // of components.responses
  std::string_view description;
};
constexpr HttpLayerError kHttpLayerErrors[] = {
    {400, "BadRequest", "Malformed HTTP: the request line, a header, Content-Length or Host"},
    {404, "NotFound", "No endpoint at the path"},
    {405, "MethodNotAllowed", "The path's endpoint takes another method (Allow names it)"},
    {411, "LengthRequired", "A chunked request body: send Content-Length"},
    {413, "PayloadTooLarge", "The request body is over the limit"},
    {417, "ExpectationFailed", "An Expect other than 100-continue"},
    {431, "HeadersTooLarge", "The request head is over the limit"},
    {500, "Internal", "An endpoint failed; the message says what"},
    {501, "NotImplemented", "A transfer coding other than chunked"},
    {503, "Overloaded", "The shard holds its limit of connections; retry after Retry-After"},
    {505, "HttpVersionNotSupported", "Not HTTP/1.0 or HTTP/1.1"},
};

const HttpLayerError& FindHttpLayerError(int status) {
  for (const HttpLayerError& e : kHttpLayerErrors) {
    if (e.status == status) return e;
  }
  throw std::logic_error("no HTTP layer error " + std::to_string(status));
}

// The responses of one operation, by status: a description and the schemas a JSON body may have
// (several: anyOf), or a media type map of its own.
class Responses {
 public:
  Responses& Json(int status, std::string_view description, std::string schema) {
    Entry& e = entries_[status];
    e.description += (e.description.empty() ? "" : "; or ") + std::string(description);
    e.schemas.push_back(std::move(schema));
    return *this;
  }
  Responses& Content(int status, std::string_view description, std::string_view content) {
    Entry& e = entries_[status];
    e.description = description;
    e.content = content;
    return *this;
  }
  // What any request of the operation may get from the HTTP layer: malformed HTTP, a head (and,
  // with `has_body`, a body) over the limit, a failed endpoint, a shard at its connection limit.
  Responses& HttpLayer(bool has_body) {
    for (const int status : {400, 413, 431, 500, 503}) {
      if (status == 413 && !has_body) continue;
      Json(status, FindHttpLayerError(status).description, HttpErrorWith(status));
    }
    return *this;
  }
  std::string Text() const {
    std::string out = "{";
    for (const auto& [status, e] : entries_) {
      if (out.size() > 1) out += ',';
      std::string content = e.content;
      if (content.empty()) {
        content = e.schemas.size() == 1 ? e.schemas[0] : "{\"anyOf\":[" + Join(e.schemas) + "]}";
        content = "{\"application/json\":{\"schema\":" + content + "}}";
      }
      out += QuoteJson(std::to_string(status)) + ":" + Response(e.description, content);
    }
    return out + "}";
  }

 private:
  struct Entry {
    std::string description;
    std::vector<std::string> schemas;
    std::string content;
  };
  static std::string Join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
    return out;
  }
  std::map<int, Entry> entries_;
};

// components.responses: every answer of the HTTP layer's own.
std::string HttpLayerResponseComponents() {
  std::string out;
  for (const HttpLayerError& e : kHttpLayerErrors) {
    if (!out.empty()) out += ',';
    out += QuoteJson(e.name) + ":" +
           Response(std::to_string(e.status) + " " + std::string(e.description),
                    Json(HttpErrorWith(e.status)));
  }
  return "{" + out + "}";
}

void AppendNumber(std::string& out, double value) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

// A bound of an int param: the largest int64 within it (bounds are float64 in the plan).
void AppendIntBound(std::string& out, double bound, bool lower) {
  const double rounded = lower ? std::ceil(bound) : std::floor(bound);
  if (rounded <= -0x1p63) {
    out += std::to_string(std::numeric_limits<std::int64_t>::min());
  } else if (rounded >= 0x1p63) {
    out += std::to_string(std::numeric_limits<std::int64_t>::max());
  } else {
    out += std::to_string(static_cast<std::int64_t>(rounded));
  }
}

void AppendScalar(std::string& out, const engine::Scalar& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    AppendNumber(out, *d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    AppendJsonString(out, *s);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out += *b ? "true" : "false";
  } else {
    out += "null";
  }
}

std::string_view JsonType(engine::ValueType type) {
  switch (type) {
    case engine::ValueType::kInt:
      return "integer";
    case engine::ValueType::kFloat:
      return "number";
    case engine::ValueType::kString:
      return "string";
    case engine::ValueType::kBool:
      return "boolean";
  }
  return "null";
}

// The string params a plan uses as regex patterns (in predicates, also inside `if`).
void CollectPatternParams(const engine::Pred& pred, std::set<std::string>& out);
void CollectPatternParams(const engine::Expr& expr, std::set<std::string>& out) {
  for (const engine::Expr& arg : expr.args) CollectPatternParams(arg, out);
  if (expr.cond) CollectPatternParams(*expr.cond, out);
}
void CollectPatternParams(const engine::Pred& pred, std::set<std::string>& out) {
  if (pred.op == engine::PredOp::kRegex && pred.param) out.insert(*pred.param);
  for (const engine::Pred& p : pred.preds) CollectPatternParams(p, out);
  for (const engine::Expr& e : pred.exprs) CollectPatternParams(e, out);
}

std::string ParamSchema(const engine::PlanParam& param, bool pattern) {
  std::string out = "{\"type\":" + QuoteJson(JsonType(param.type));
  if (param.type == engine::ValueType::kInt) {
    if (param.min) AppendIntBound(out += ",\"minimum\":", *param.min, true);
    if (param.max) AppendIntBound(out += ",\"maximum\":", *param.max, false);
  } else if (param.type == engine::ValueType::kFloat) {
    if (param.min) AppendNumber(out += ",\"minimum\":", *param.min);
    if (param.max) AppendNumber(out += ",\"maximum\":", *param.max);
  }
  std::string description;
  if (pattern) {
    out += R"(,"format":"regex")";
    description = "an RE2 pattern, compiled with the flags the plan uses it with";
  }
  if (param.max_bytes) {
    out += ",\"x-max-bytes\":" + std::to_string(*param.max_bytes);  // JSON Schema counts characters
    if (!description.empty()) description += "; ";
    description += "at most " + std::to_string(*param.max_bytes) + " bytes of UTF-8";
  }
  if (!description.empty()) out += ",\"description\":" + QuoteJson(description);
  AppendScalar(out += ",\"default\":", param.default_value);
  return out + "}";
}

// The request's fields that are the same for every plan (spec/request.toml: all but plan, surface,
// viewer_id and params, which each plan's schema specialises), closing its properties and the
// object.
void AppendRequestOptions(std::string& out) {
  for (const auto& [name, schema] : kRequestFieldSchemas) {
    if (name == "plan" || name == "surface" || name == "viewer_id" || name == "params") continue;
    out += ',';
    AppendJsonString(out, name);
    out += ':';
    out += schema;
  }
  out += "}}";
}

std::string RankRequestSchema(const engine::Plan& plan) {
  std::set<std::string> patterns;
  for (const auto& [id, pred] : plan.preds) CollectPatternParams(pred, patterns);
  for (const auto& [id, expr] : plan.exprs) CollectPatternParams(expr, patterns);
  std::string params = R"({"type":"object","additionalProperties":false,"properties":{)";
  bool first = true;
  for (const engine::PlanParam& param : plan.params) {
    if (!first) params += ',';
    first = false;
    AppendJsonString(params, param.name);
    params += ':' + ParamSchema(param, patterns.contains(param.name));
  }
  params += "}}";
  const bool viewer = engine::ReadsViewer(plan);
  std::string out = R"({"type":"object","additionalProperties":false,"required":["plan")";
  out += viewer ? ",\"viewer_id\"]" : "]";
  out += ",\"properties\":{\"plan\":{\"const\":" + QuoteJson(plan.name) + "}";
  out +=
      R"(,"viewer_id":{"type":"integer","minimum":0,"maximum":9223372036854775807,"description":)";
  AppendJsonString(
      out, viewer ? "the viewer the plan ranks for" : "ignored: the plan has no viewer node");
  out += "},\"params\":" + params;
  AppendRequestOptions(out);
  return out;
}

// A request naming `surface`: viewer_id is required (it picks the variant), and params are those
// of the variant's plan (an unknown one is a 400 invalid_param).
std::string SurfaceRequestSchema(const engine::Surface& surface) {
  std::string out =
      R"({"type":"object","additionalProperties":false,"required":["surface","viewer_id"],)";
  out += "\"properties\":{\"surface\":{\"const\":" + QuoteJson(surface.name) + "}";
  out +=
      R"json(,"viewer_id":{"type":"integer","minimum":0,"maximum":9223372036854775807,"description":"the viewer, whose variant of the surface answers: docs/experiments.md"})json";
  std::string variants;
  for (const engine::SurfaceVariant& v : surface.variants)
    variants += (variants.empty() ? "" : ", ") + v.name + " runs plan " + v.plan;
  out += R"(,"params":{"type":"object","description":)" +
         QuoteJson("the params of the variant's plan; variants: " + variants) + "}";
  AppendRequestOptions(out);
  return out;
}

std::string RowSchema(const engine::Node& node, const engine::Registry& registry) {
  std::set<std::string> keys(node.output_keys.begin(), node.output_keys.end());
  keys.insert("id");
  std::string properties, required;
  for (const std::string& key : keys) {
    if (!properties.empty()) properties += ',', required += ',';
    AppendJsonString(properties, key);
    AppendJsonString(required, key);
    // Every value may be null (a row without it); `id` never is.
    if (key == "id") {
      properties += ":{\"type\":\"integer\"}";
      continue;
    }
    const engine::KeyDef* def = registry.FindKey(key);
    if (def == nullptr) throw std::logic_error("output key " + key + " is not the registry's");
    properties += ":{\"type\":[" + QuoteJson(JsonType(def->type)) + ",\"null\"]}";
  }
  return R"({"type":"object","additionalProperties":false,"required":[)" + required +
         "],\"properties\":{" + properties + "}}";
}

std::string RankResponseSchema(const engine::Plan& plan, const engine::Registry& registry) {
  std::string outputs, required;
  for (const std::string& id : plan.outputs) {
    const engine::Node* node = plan.FindNode(id);
    if (node == nullptr) continue;  // a loaded plan's outputs are its nodes
    if (!outputs.empty()) outputs += ',', required += ',';
    AppendJsonString(outputs, id);
    AppendJsonString(required, id);
    outputs += ":{\"type\":\"array\",\"items\":" + RowSchema(*node, registry) + "}";
  }
  std::string out =
      R"({"type":"object","additionalProperties":false,"required":["request_id","plan","plan_digest","outputs","degraded"],"properties":{"request_id":{"type":"string"},"plan":{"const":)";
  AppendJsonString(out, plan.name);
  out += "},\"plan_digest\":{\"const\":";
  AppendJsonString(out, plan.digest);
  out +=
      R"json(},"surface":{"type":"string","description":"the surface the request named, absent when it named a plan"},"variant":{"type":"string","description":"the viewer's variant of the surface, which runs this plan"})json";
  out += R"(,"outputs":{"type":"object","additionalProperties":false,"required":[)" + required +
         "],\"properties\":{" + outputs + "}}";
  out += R"(,"degraded":{"type":"array","items":)" + Ref("Degraded") + "}";
  out += ",\"explain\":" + Ref("Explain") + "}}";
  return out;
}

// The schemas that do not depend on the plans.
// ErrorDetail's code: every wire name of the error code table.
std::string ErrorDetailSchema() {
  std::string codes;
  for (const engine::ErrorCodeInfo& info : engine::AllErrorCodes())
    codes += (codes.empty() ? "" : ",") + QuoteJson(info.wire_name);
  return R"("ErrorDetail":{"type":"object","additionalProperties":false,"required":["code","message"],"properties":{"code":{"enum":[)" +
         codes + R"(]},"message":{"type":"string"}}},)";
}

constexpr std::string_view kFixedSchemas = R"json(
"RankError":{"type":"object","additionalProperties":false,"required":["request_id","error"],"properties":{
  "request_id":{"type":"string","description":"the request's request_id, rankd-N when it had none, empty when shed before reading it"},
  "error":{"$ref":"#/components/schemas/ErrorDetail"},
  "explain":{"$ref":"#/components/schemas/Explain","description":"what ran, when the request asked for explain and failed as a whole (deadline_exceeded, upstream_error, internal)"}}},
"ServiceError":{"type":"object","additionalProperties":false,"required":["error"],"properties":{
  "error":{"$ref":"#/components/schemas/ErrorDetail"}}},
"HttpError":{"type":"object","additionalProperties":false,"required":["error"],"properties":{
  "request_id":{"type":"string","description":"the request's X-Request-Id, when it was parsed and had a valid one"},
  "error":{"$ref":"#/components/schemas/ErrorDetail"}}},
"Degraded":{"type":"object","additionalProperties":false,"required":["node","reason","message"],"properties":{
  "node":{"type":"string"},"reason":{"enum":["timeout","error"]},"message":{"type":"string"}}},
"ExplainNode":{"type":"object","additionalProperties":false,
  "required":["node","op","status","start_us","end_us","rows_in","rows_out","redis_commands","round_trips","reply_bytes","unparsable_values","ran_on","cpu_us"],
  "properties":{"node":{"type":"string"},"op":{"type":"string"},
  "status":{"enum":["ok","degraded","failed","not_run"]},"reason":{"enum":["timeout","error"]},
  "start_us":{"type":"integer","minimum":-1},"end_us":{"type":"integer","minimum":-1},
  "rows_in":{"type":"integer","minimum":0},"rows_out":{"type":"integer","minimum":0},
  "redis_commands":{"type":"integer","minimum":0},"round_trips":{"type":"integer","minimum":0},
  "reply_bytes":{"type":"integer","minimum":0},"unparsable_values":{"type":"integer","minimum":0},
  "cache_hits":{"type":"integer","minimum":0},"cache_misses":{"type":"integer","minimum":0},
  "ran_on":{"enum":["loop","pool"]},"cpu_us":{"type":"integer","minimum":0},
  "shared":{"const":true},"saved_redis_commands":{"type":"integer","minimum":0}}},
"TraceNode":{"type":"object","additionalProperties":false,"required":["node","present"],"properties":{
  "node":{"type":"string"},"present":{"type":["boolean","null"]},"rank":{"type":"integer","minimum":1},
  "values":{"type":"object"}}},
"Trace":{"type":"object","additionalProperties":false,"required":["id","outcome","outputs","removed_by","nodes"],"properties":{
  "id":{"type":"integer"},"outcome":{"enum":["returned","removed","not_returned","not_produced"]},
  "outputs":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["node","rank"],"properties":{
    "node":{"type":"string"},"rank":{"type":"integer","minimum":1}}}},
  "removed_by":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["node","op","why"],"properties":{
    "node":{"type":"string"},"op":{"type":"string"},"why":{"type":"string"}}}},
  "nodes":{"type":"array","items":{"$ref":"#/components/schemas/TraceNode"}}}},
"Explain":{"type":"object","additionalProperties":false,"required":["nodes","totals"],"properties":{
  "nodes":{"type":"array","items":{"$ref":"#/components/schemas/ExplainNode"}},
  "totals":{"type":"object","additionalProperties":false,"required":["redis_commands","round_trips","cpu_us","elapsed_us"],"properties":{
    "redis_commands":{"type":"integer","minimum":0},"round_trips":{"type":"integer","minimum":0},
    "cpu_us":{"type":"integer","minimum":0},"elapsed_us":{"type":"integer","minimum":0},
    "shared_nodes":{"type":"integer","minimum":1},"saved_redis_commands":{"type":"integer","minimum":0}}},
  "trace":{"type":"array","items":{"$ref":"#/components/schemas/Trace"}}}},
"PlanList":{"type":"object","additionalProperties":false,"required":["registry_digest","loaded_at","plans"],"properties":{
  "registry_digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"},
  "plans":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["name","digest","loaded_at","models"],"properties":{
    "name":{"type":"string"},"digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"},
    "models":{"type":"object","additionalProperties":{"type":"string"},"description":"The tree models the plan scores, each with the SHA-256 of its model file."}}}}}},
"PlanArtifact":{"type":"object","description":"the plan's artifact as rankc wrote it: docs/plan-format.md, schema/plan.v1.schema.json"},
"Health":{"type":"object","additionalProperties":false,"required":["status"],"properties":{"status":{"const":"serving"}}},
"Ready":{"type":"object","additionalProperties":false,"required":["ready"],"properties":{"ready":{"const":true}}},
"NotReady":{"type":"object","additionalProperties":false,"required":["ready","reason"],"properties":{"ready":{"const":false},"reason":{"type":"string"}}},
"ReloadOutcome":{"type":"object","additionalProperties":false,"required":["loaded","dry_run","message"],"properties":{
  "loaded":{"type":"boolean"},"dry_run":{"type":"boolean"},"message":{"type":"string"},
  "added":{"type":"array","items":{"type":"string"}},"removed":{"type":"array","items":{"type":"string"}},
  "changed":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["plan","from_digest","to_digest"],"properties":{
    "plan":{"type":"string"},"from_digest":{"type":"string"},"to_digest":{"type":"string"}}}},
  "in_use":{"type":"array","items":{"type":"string"}}}},
"OpenApiDocument":{"type":"object","description":"this document"}
)json";

std::string Paths() {
  using engine::ErrorCode;
  std::string out = "{";
  out += R"("/rank":{"post":{"operationId":"rank","summary":"Rank for a request: docs/engine.md",)";
  out += R"("requestBody":{"required":true,"content":)" + Json(Ref("RankRequest")) + "},";
  out += "\"responses\":" +
         Responses()
             .Json(200, "The ranking (also a degraded one: see degraded)", Ref("RankResponse"))
             .Json(400, "A malformed request or param",
                   RankErrorWith({engine::WireName(ErrorCode::kBadRequest),
                                  engine::WireName(ErrorCode::kInvalidParam)}))
             .Json(404, "No plan (or surface) of that name in the store",
                   RankErrorWith(ErrorCode::kUnknownPlan))
             .Json(500, "An internal error, the message says what",
                   RankErrorWith(ErrorCode::kInternal))
             .Json(502, "A Redis command of a node with on_error fail failed",
                   RankErrorWith(ErrorCode::kUpstreamError))
             .Json(503,
                   "Refused by admission (overloaded; retry later), or stopped unfinished by a "
                   "drain past its grace (shutting_down; retry on another replica)",
                   RankErrorWith({engine::WireName(ErrorCode::kOverloaded),
                                  engine::WireName(ErrorCode::kShuttingDown)}))
             .Json(504, "A node with on_error fail, or the request, ran past its deadline",
                   RankErrorWith(ErrorCode::kDeadlineExceeded))
             .HttpLayer(true)
             .Text() +
         "}}";

  out +=
      R"(,"/plans":{"get":{"operationId":"listPlans","summary":"The plans being served","responses":)" +
      Responses().Json(200, "The store's plans", Ref("PlanList")).HttpLayer(false).Text() + "}}";
  out += R"(,"/plans/{name}":{"get":{"operationId":"getPlan","summary":"A plan's artifact",)";
  out +=
      R"("parameters":[{"name":"name","in":"path","required":true,"schema":{"type":"string"}}],)";
  out +=
      "\"responses\":" +
      Responses()
          .Json(200, "The artifact", Ref("PlanArtifact"))
          .Json(404, "No plan of that name in the store", ServiceErrorWith(ErrorCode::kUnknownPlan))
          .Json(404, FindHttpLayerError(404).description, HttpErrorWith(404))
          .HttpLayer(false)
          .Text() +
      "}}";
  out += R"(,"/healthz":{"get":{"operationId":"health","summary":"Liveness","responses":)" +
         Responses().Json(200, "The process serves", Ref("Health")).HttpLayer(false).Text() + "}}";
  out += R"(,"/readyz":{"get":{"operationId":"ready","summary":"Readiness","responses":)" +
         Responses()
             .Json(200, "A store is loaded and every Redis endpoint is connected", Ref("Ready"))
             .Json(503, "Not ready; the reason names the endpoints", Ref("NotReady"))
             .HttpLayer(false)
             .Text() +
         "}}";
  out +=
      R"(,"/metrics":{"get":{"operationId":"metrics","summary":"Prometheus metrics: docs/operations.md","responses":)" +
      Responses().Content(200, "Text exposition format 0.0.4", kPlainText).HttpLayer(false).Text() +
      "}}";
  out +=
      R"(,"/openapi.json":{"get":{"operationId":"openapi","summary":"This document","responses":)" +
      Responses().Json(200, "The document", Ref("OpenApiDocument")).HttpLayer(false).Text() + "}}";
  out +=
      R"(,"/admin/reload":{"post":{"operationId":"reload","summary":"Load the plan store again, from loopback only",)"
      R"("parameters":[{"name":"dry_run","in":"query","required":false,"schema":{"enum":["0","1"]},)"
      R"("description":"1: load the store and answer how it differs, serving it not"},)"
      R"({"name":"allow_removals","in":"query","required":false,"schema":{"enum":["0","1"]},)"
      R"("description":"1: remove plans even if they are in use, see docs/operations.md, Reload"}],)"
      R"("responses":)" +
      Responses()
          .Json(200, "The new store is served (or, a dry run, would load): how it differs",
                Ref("ReloadOutcome"))
          .Json(400, "A query parameter other than dry_run and allow_removals, or not 1 or 0",
                ServiceErrorWith(ErrorCode::kBadRequest))
          .Json(403, "Not from a loopback address", ServiceErrorWith(ErrorCode::kForbidden))
          .Json(409, "The store removes plans in use; the old one keeps serving",
                ServiceErrorWith(ErrorCode::kPlanInUse))
          .Json(422, "The store was refused; the old one keeps serving", Ref("ReloadOutcome"))
          .HttpLayer(true)
          .Text() +
      "}}";
  return out + "}";
}

}  // namespace

std::string OpenApiDocument(const engine::PlanStore& store) {
  const engine::Registry& registry = store.registry();
  std::string out = R"({"openapi":"3.1.0","info":{"title":"rankd","version":"1",)";
  out +=
      R"("description":"Ranking over HTTP: the plans of the store being served, against Redis. Registry )";
  out += registry.digest();
  out += R"(."},"paths":)" + Paths();

  std::string request_refs, response_refs, per_plan;
  for (const auto& [name, plan] : store.plans()) {
    if (!request_refs.empty()) request_refs += ',', response_refs += ',';
    request_refs += Ref("RankRequest." + name);
    response_refs += Ref("RankResponse." + name);
    per_plan += ",\"RankRequest." + name + "\":" + RankRequestSchema(*plan);
    per_plan += ",\"RankResponse." + name + "\":" + RankResponseSchema(*plan, registry);
  }
  // A surface's request answers with its variant's plan's response (with surface and variant).
  for (const auto& [name, surface] : store.surfaces()) {
    if (!request_refs.empty()) request_refs += ',';
    request_refs += Ref("RankRequest.surface." + name);
    per_plan += ",\"RankRequest.surface." + name + "\":" + SurfaceRequestSchema(*surface);
  }
  out += R"(,"components":{"schemas":{)";
  out += ErrorDetailSchema();
  out += kFixedSchemas;
  // With no plans, a request names some plan and gets 404.
  out +=
      request_refs.empty()
          ? R"(,"RankRequest":{"type":"object","required":["plan"],"properties":{"plan":{"type":"string"}}})"
          : ",\"RankRequest\":{\"oneOf\":[" + request_refs + "]}";
  out += request_refs.empty() ? R"(,"RankResponse":{"not":{}})"
                              : ",\"RankResponse\":{\"oneOf\":[" + response_refs + "]}";
  out += per_plan + "},\"responses\":" + HttpLayerResponseComponents() + "}}";
  return out;
}

}  // namespace rankd::service
