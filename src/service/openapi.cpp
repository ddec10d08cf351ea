#include "rankd/service/openapi.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "openapi_request.gen.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/service/http_errors.h"

namespace rankd::service {

namespace {

using engine::json::JsonWriter;

// The JSON text `write` writes: a schema kept as a value of the tables below (Responses), written
// into the document with JsonWriter::Raw.
template <class Write>
std::string Written(Write&& write) {
  std::string out;
  JsonWriter w(out);
  write(w);
  return out;
}

void WriteRef(JsonWriter& w, std::string_view schema) {
  w.BeginObject().Member("$ref", "#/components/schemas/" + std::string(schema)).EndObject();
}

std::string Ref(std::string_view schema) {
  return Written([&](JsonWriter& w) { WriteRef(w, schema); });
}

// {"application/json":{"schema":<schema>}}, the schema written by `schema`.
template <class Schema>
void WriteJsonContent(JsonWriter& w, Schema&& schema) {
  w.BeginObject().Key("application/json").BeginObject().Key("schema");
  schema();
  w.EndObject().EndObject();
}

// {"text/plain":{"schema":{"type":"string"}}}
void WritePlainTextContent(JsonWriter& w) {
  w.BeginObject().Key("text/plain").BeginObject().Key("schema");
  w.BeginObject().Member("type", "string").EndObject();
  w.EndObject().EndObject();
}

// {"allOf":[<$ref base>,{"properties":{"error":{"properties":{"code":{<rule>:<codes>}}}}}]}: an
// error of schema `base` whose code is `codes` (rule "const": one code; "enum": a list).
std::string ErrorWith(std::string_view base, std::string_view rule,
                      std::initializer_list<std::string_view> codes) {
  return Written([&](JsonWriter& w) {
    w.BeginObject().Key("allOf").BeginArray();
    WriteRef(w, base);
    w.BeginObject().Key("properties").BeginObject().Key("error").BeginObject();
    w.Key("properties").BeginObject().Key("code").BeginObject().Key(rule);
    if (rule == "enum") {
      w.BeginArray();
      for (const std::string_view code : codes) w.String(code);
      w.EndArray();
    } else {
      w.String(*codes.begin());
    }
    w.EndObject().EndObject().EndObject().EndObject().EndObject();
    w.EndArray().EndObject();
  });
}

// A /rank error answer whose code is one of `codes`.
std::string RankErrorWith(std::initializer_list<std::string_view> codes) {
  return ErrorWith("RankError", "enum", codes);
}

std::string RankErrorWith(engine::ErrorCode code) {
  return RankErrorWith({engine::WireName(code)});
}

// A plain service error (the endpoints other than /rank) with code `code`.
std::string ServiceErrorWith(engine::ErrorCode code) {
  return ErrorWith("ServiceError", "const", {engine::WireName(code)});
}

// An error of the HTTP layer's own (request_id when the request had a valid X-Request-Id) with
// the code of `status`.
std::string HttpErrorWith(int status) {
  const engine::ErrorCode code = HttpLayerErrorCode(status).value_or(engine::ErrorCode::kInternal);
  return ErrorWith("HttpError", "const", {engine::WireName(code)});
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
// (several: anyOf), or plain text.
class Responses {
 public:
  Responses& Json(int status, std::string_view description, std::string schema) {
    Entry& e = entries_[status];
    e.description += (e.description.empty() ? "" : "; or ") + std::string(description);
    e.schemas.push_back(std::move(schema));
    return *this;
  }
  Responses& PlainText(int status, std::string_view description) {
    Entry& e = entries_[status];
    e.description = description;
    e.plain_text = true;
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
  void Write(JsonWriter& w) const {
    w.BeginObject();
    for (const auto& [status, e] : entries_) {
      w.Key(std::to_string(status)).BeginObject().Member("description", e.description);
      w.Key("content");
      if (e.plain_text) {
        WritePlainTextContent(w);
      } else {
        WriteJsonContent(w, [&] {
          if (e.schemas.size() == 1) {
            w.Raw(e.schemas[0]);
            return;
          }
          w.BeginObject().Key("anyOf").BeginArray();
          for (const std::string& schema : e.schemas) w.Raw(schema);
          w.EndArray().EndObject();
        });
      }
      w.EndObject();
    }
    w.EndObject();
  }

 private:
  struct Entry {
    std::string description;
    std::vector<std::string> schemas;
    bool plain_text = false;
  };
  std::map<int, Entry> entries_;
};

// components.responses: every answer of the HTTP layer's own.
void WriteHttpLayerResponseComponents(JsonWriter& w) {
  w.BeginObject();
  for (const HttpLayerError& e : kHttpLayerErrors) {
    w.Key(e.name).BeginObject();
    w.Member("description", std::to_string(e.status) + " " + std::string(e.description));
    w.Key("content");
    WriteJsonContent(w, [&] { w.Raw(HttpErrorWith(e.status)); });
    w.EndObject();
  }
  w.EndObject();
}

// A bound of an int param: the largest int64 within it (bounds are float64 in the plan).
std::int64_t IntBound(double bound, bool lower) {
  const double rounded = lower ? std::ceil(bound) : std::floor(bound);
  if (rounded <= -0x1p63) return std::numeric_limits<std::int64_t>::min();
  if (rounded >= 0x1p63) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(rounded);
}

void WriteScalar(JsonWriter& w, const engine::Scalar& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    w.Int(*i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    w.Double(*d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    w.String(*s);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    w.Bool(*b);
  } else {
    w.Null();
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

void WriteParamSchema(JsonWriter& w, const engine::PlanParam& param, bool pattern) {
  w.BeginObject().Member("type", JsonType(param.type));
  if (param.type == engine::ValueType::kInt) {
    if (param.min) w.Key("minimum").Int(IntBound(*param.min, true));
    if (param.max) w.Key("maximum").Int(IntBound(*param.max, false));
  } else if (param.type == engine::ValueType::kFloat) {
    if (param.min) w.Key("minimum").Double(*param.min);
    if (param.max) w.Key("maximum").Double(*param.max);
  }
  std::string description;
  if (pattern) {
    w.Member("format", "regex");
    description = "an RE2 pattern, compiled with the flags the plan uses it with";
  }
  if (param.max_bytes) {
    // JSON Schema counts characters, hence an extension for bytes.
    w.Key("x-max-bytes").Int(*param.max_bytes);
    if (!description.empty()) description += "; ";
    description += "at most " + std::to_string(*param.max_bytes) + " bytes of UTF-8";
  }
  if (!description.empty()) w.Member("description", description);
  w.Key("default");
  WriteScalar(w, param.default_value);
  w.EndObject();
}

// "viewer_id": an integer from 0 to int64's largest, described by `description`.
void WriteViewerIdProperty(JsonWriter& w, std::string_view description) {
  w.Key("viewer_id").BeginObject().Member("type", "integer").Member("minimum", std::int64_t{0});
  w.Member("maximum", std::numeric_limits<std::int64_t>::max());
  w.Member("description", description).EndObject();
}

// The request's fields that are the same for every plan (spec/request.toml's fields without
// per_plan, which each plan's schema writes itself), closing its properties and the object.
void WriteRequestOptions(JsonWriter& w) {
  for (const auto& [name, schema] : kRequestFieldSchemas) w.Key(name).Raw(schema);
  w.EndObject().EndObject();
}

void WriteRankRequestSchema(JsonWriter& w, const engine::Plan& plan) {
  std::set<std::string> patterns;
  for (const auto& [id, pred] : plan.preds) CollectPatternParams(pred, patterns);
  for (const auto& [id, expr] : plan.exprs) CollectPatternParams(expr, patterns);
  const bool viewer = engine::ReadsViewer(plan);
  w.BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray().String("plan");
  if (viewer) w.String("viewer_id");
  w.EndArray();
  w.Key("properties").BeginObject();
  w.Key("plan").BeginObject().Member("const", plan.name).EndObject();
  WriteViewerIdProperty(
      w, viewer ? "the viewer the plan ranks for" : "ignored: the plan has no viewer node");
  w.Key("params").BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("properties").BeginObject();
  for (const engine::PlanParam& param : plan.params) {
    w.Key(param.name);
    WriteParamSchema(w, param, patterns.contains(param.name));
  }
  w.EndObject().EndObject();
  WriteRequestOptions(w);
}

// A request naming `surface`: viewer_id is required (it picks the variant), and params are those
// of the variant's plan (an unknown one is a 400 invalid_param).
void WriteSurfaceRequestSchema(JsonWriter& w, const engine::Surface& surface) {
  w.BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray().String("surface").String("viewer_id").EndArray();
  w.Key("properties").BeginObject();
  w.Key("surface").BeginObject().Member("const", surface.name).EndObject();
  WriteViewerIdProperty(w, "the viewer, whose variant of the surface answers: docs/experiments.md");
  std::string variants;
  for (const engine::SurfaceVariant& v : surface.variants)
    variants += (variants.empty() ? "" : ", ") + v.name + " runs plan " + v.plan;
  w.Key("params").BeginObject().Member("type", "object");
  w.Member("description", "the params of the variant's plan; variants: " + variants).EndObject();
  WriteRequestOptions(w);
}

// What an int64 in an answer means to a JavaScript client (ids are 64-bit).
constexpr std::string_view kInt64Description =
    "a 64-bit integer, written exactly; JavaScript's JSON.parse rounds integers beyond 2^53, so a "
    "JavaScript client reads answers with a reader that keeps them (JSON.parse with a reviver "
    "reading context.source where supported, or a lossless JSON library) as BigInt or strings";

void WriteRowSchema(JsonWriter& w, const engine::Node& node, const engine::Registry& registry) {
  std::set<std::string> keys(node.output_keys.begin(), node.output_keys.end());
  keys.insert("id");
  w.BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray();
  for (const std::string& key : keys) w.String(key);
  w.EndArray();
  w.Key("properties").BeginObject();
  for (const std::string& key : keys) {
    w.Key(key).BeginObject();
    // Every value may be null (a row without it); `id` never is.
    if (key == "id") {
      w.Member("type", "integer").Member("format", "int64");
      w.Member("description", kInt64Description).EndObject();
      continue;
    }
    const engine::KeyDef* def = registry.FindKey(key);
    if (def == nullptr) throw std::logic_error("output key " + key + " is not the registry's");
    w.Key("type").BeginArray().String(JsonType(def->type)).String("null").EndArray();
    w.EndObject();
  }
  w.EndObject().EndObject();
}

void WriteRankResponseSchema(JsonWriter& w, const engine::Plan& plan,
                             const engine::Registry& registry) {
  std::vector<const engine::Node*> outputs;
  for (const std::string& id : plan.outputs) {
    // A loaded plan's outputs are its nodes.
    if (const engine::Node* node = plan.FindNode(id)) outputs.push_back(node);
  }
  w.BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray();
  for (const std::string_view name : {"request_id", "plan", "plan_digest", "outputs", "degraded"})
    w.String(name);
  w.EndArray();
  w.Key("properties").BeginObject();
  w.Key("request_id").BeginObject().Member("type", "string").EndObject();
  w.Key("plan").BeginObject().Member("const", plan.name).EndObject();
  w.Key("plan_digest").BeginObject().Member("const", plan.digest).EndObject();
  w.Key("surface").BeginObject().Member("type", "string");
  w.Member("description", "the surface the request named, absent when it named a plan");
  w.EndObject();
  w.Key("variant").BeginObject().Member("type", "string");
  w.Member("description", "the viewer's variant of the surface, which runs this plan");
  w.EndObject();
  w.Key("outputs").BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray();
  for (const engine::Node* node : outputs) w.String(node->id);
  w.EndArray();
  w.Key("properties").BeginObject();
  for (const engine::Node* node : outputs) {
    w.Key(node->id).BeginObject().Member("type", "array").Key("items");
    WriteRowSchema(w, *node, registry);
    w.EndObject();
  }
  w.EndObject().EndObject();
  w.Key("degraded").BeginObject().Member("type", "array").Key("items");
  WriteRef(w, "Degraded");
  w.EndObject();
  w.Key("explain");
  WriteRef(w, "Explain");
  w.EndObject().EndObject();
}

// The schemas that do not depend on the plans.
// ErrorDetail's code: every wire name of the error code table.
void WriteErrorDetailSchema(JsonWriter& w) {
  w.Key("ErrorDetail").BeginObject().Member("type", "object").Member("additionalProperties", false);
  w.Key("required").BeginArray().String("code").String("message").EndArray();
  w.Key("properties").BeginObject().Key("code").BeginObject().Key("enum").BeginArray();
  for (const engine::ErrorCodeInfo& info : engine::AllErrorCodes()) w.String(info.wire_name);
  w.EndArray().EndObject();
  w.Key("message").BeginObject().Member("type", "string").EndObject();
  w.EndObject().EndObject();
}

// The other fixed schemas, by name, each as its JSON text.
constexpr std::pair<std::string_view, std::string_view> kFixedSchemas[] = {
    {"RankError",
     R"json({"type":"object","additionalProperties":false,"required":["request_id","error"],"properties":{
  "request_id":{"type":"string","description":"the request's request_id, rankd-N when it had none, empty when shed before reading it"},
  "error":{"$ref":"#/components/schemas/ErrorDetail"},
  "explain":{"$ref":"#/components/schemas/Explain","description":"what ran, when the request asked for explain and failed as a whole (deadline_exceeded, upstream_error, internal)"}}})json"},
    {"ServiceError",
     R"json({"type":"object","additionalProperties":false,"required":["error"],"properties":{
  "error":{"$ref":"#/components/schemas/ErrorDetail"}}})json"},
    {"HttpError",
     R"json({"type":"object","additionalProperties":false,"required":["error"],"properties":{
  "request_id":{"type":"string","description":"the request's X-Request-Id, when it was parsed and had a valid one"},
  "error":{"$ref":"#/components/schemas/ErrorDetail"}}})json"},
    {"Degraded",
     R"json({"type":"object","additionalProperties":false,"required":["node","reason","message"],"properties":{
  "node":{"type":"string"},"reason":{"enum":["timeout","error"]},"message":{"type":"string"}}})json"},
    {"ExplainNode", R"json({"type":"object","additionalProperties":false,
  "required":["node","op","status","start_us","end_us","rows_in","rows_out","redis_commands","round_trips","reply_bytes","unparsable_values","ran_on","cpu_us"],
  "properties":{"node":{"type":"string"},"op":{"type":"string"},
  "status":{"enum":["ok","degraded","failed","not_run"]},"reason":{"enum":["timeout","error"]},
  "start_us":{"type":"integer","minimum":-1},"end_us":{"type":"integer","minimum":-1},
  "rows_in":{"type":"integer","minimum":0},"rows_out":{"type":"integer","minimum":0},
  "redis_commands":{"type":"integer","minimum":0},"round_trips":{"type":"integer","minimum":0},
  "reply_bytes":{"type":"integer","minimum":0},"unparsable_values":{"type":"integer","minimum":0},
  "cache_hits":{"type":"integer","minimum":0},"cache_misses":{"type":"integer","minimum":0},
  "ran_on":{"enum":["loop","pool"]},"cpu_us":{"type":"integer","minimum":0},
  "shared":{"const":true},"saved_redis_commands":{"type":"integer","minimum":0}}})json"},
    {"TraceNode",
     R"json({"type":"object","additionalProperties":false,"required":["node","present"],"properties":{
  "node":{"type":"string"},"present":{"type":["boolean","null"]},"rank":{"type":"integer","minimum":1},
  "values":{"type":"object"}}})json"},
    {"Trace",
     R"json({"type":"object","additionalProperties":false,"required":["id","outcome","outputs","removed_by","nodes"],"properties":{
  "id":{"type":"integer","format":"int64","description":"a 64-bit integer: see a row's id"},"outcome":{"enum":["returned","removed","not_returned","not_produced"]},
  "outputs":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["node","rank"],"properties":{
    "node":{"type":"string"},"rank":{"type":"integer","minimum":1}}}},
  "removed_by":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["node","op","why"],"properties":{
    "node":{"type":"string"},"op":{"type":"string"},"why":{"type":"string"}}}},
  "nodes":{"type":"array","items":{"$ref":"#/components/schemas/TraceNode"}}}})json"},
    {"Explain",
     R"json({"type":"object","additionalProperties":false,"required":["nodes","totals"],"properties":{
  "nodes":{"type":"array","items":{"$ref":"#/components/schemas/ExplainNode"}},
  "totals":{"type":"object","additionalProperties":false,"required":["redis_commands","round_trips","cpu_us","elapsed_us"],"properties":{
    "redis_commands":{"type":"integer","minimum":0},"round_trips":{"type":"integer","minimum":0},
    "cpu_us":{"type":"integer","minimum":0},"elapsed_us":{"type":"integer","minimum":0},
    "shared_nodes":{"type":"integer","minimum":1},"saved_redis_commands":{"type":"integer","minimum":0}}},
  "trace":{"type":"array","items":{"$ref":"#/components/schemas/Trace"}}}})json"},
    {"PlanList",
     R"json({"type":"object","additionalProperties":false,"required":["registry_digest","loaded_at","plans"],"properties":{
  "registry_digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"},
  "plans":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["name","digest","loaded_at","models"],"properties":{
    "name":{"type":"string"},"digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"},
    "models":{"type":"object","additionalProperties":{"type":"string"},"description":"The tree models the plan scores, each with the SHA-256 of its model file."}}}}}})json"},
    {"PlanArtifact",
     R"json({"type":"object","description":"the plan's artifact as rankc wrote it: docs/plan-format.md, schema/plan.v1.schema.json"})json"},
    {"Health",
     R"json({"type":"object","additionalProperties":false,"required":["status"],"properties":{"status":{"const":"serving"}}})json"},
    {"Ready",
     R"json({"type":"object","additionalProperties":false,"required":["ready"],"properties":{"ready":{"const":true}}})json"},
    {"NotReady",
     R"json({"type":"object","additionalProperties":false,"required":["ready","reason"],"properties":{"ready":{"const":false},"reason":{"type":"string"}}})json"},
    {"ReloadOutcome",
     R"json({"type":"object","additionalProperties":false,"required":["loaded","dry_run","message"],"properties":{
  "loaded":{"type":"boolean"},"dry_run":{"type":"boolean"},"message":{"type":"string"},
  "added":{"type":"array","items":{"type":"string"}},"removed":{"type":"array","items":{"type":"string"}},
  "changed":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["plan","from_digest","to_digest"],"properties":{
    "plan":{"type":"string"},"from_digest":{"type":"string"},"to_digest":{"type":"string"}}}},
  "in_use":{"type":"array","items":{"type":"string"}}}})json"},
    {"OpenApiDocument", R"json({"type":"object","description":"this document"})json"},
};

// An operation `method` at `path`: operationId, summary, what `extra` writes (parameters, a
// request body), and its responses.
template <class Extra>
void WriteOperation(JsonWriter& w, std::string_view path, std::string_view method,
                    std::string_view operation_id, std::string_view summary, Extra&& extra,
                    const Responses& responses) {
  w.Key(path).BeginObject().Key(method).BeginObject();
  w.Member("operationId", operation_id).Member("summary", summary);
  extra();
  w.Key("responses");
  responses.Write(w);
  w.EndObject().EndObject();
}

void WriteOperation(JsonWriter& w, std::string_view path, std::string_view method,
                    std::string_view operation_id, std::string_view summary,
                    const Responses& responses) {
  WriteOperation(
      w, path, method, operation_id, summary, [] {}, responses);
}

// An optional query parameter `name` whose value is "0" or "1".
void WriteFlagParameter(JsonWriter& w, std::string_view name, std::string_view description) {
  w.BeginObject().Member("name", name).Member("in", "query").Member("required", false);
  w.Key("schema").BeginObject().Key("enum").BeginArray().String("0").String("1").EndArray();
  w.EndObject();
  w.Member("description", description).EndObject();
}

void WritePaths(JsonWriter& w) {
  using engine::ErrorCode;
  w.BeginObject();
  WriteOperation(
      w, "/rank", "post", "rank", "Rank for a request: docs/engine.md",
      [&] {
        w.Key("requestBody").BeginObject().Member("required", true).Key("content");
        WriteJsonContent(w, [&] { WriteRef(w, "RankRequest"); });
        w.EndObject();
      },
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
          .HttpLayer(true));
  WriteOperation(w, "/plans", "get", "listPlans", "The plans being served",
                 Responses().Json(200, "The store's plans", Ref("PlanList")).HttpLayer(false));
  WriteOperation(
      w, "/plans/{name}", "get", "getPlan", "A plan's artifact",
      [&] {
        w.Key("parameters").BeginArray().BeginObject().Member("name", "name");
        w.Member("in", "path").Member("required", true);
        w.Key("schema").BeginObject().Member("type", "string").EndObject();
        w.EndObject().EndArray();
      },
      Responses()
          .Json(200, "The artifact", Ref("PlanArtifact"))
          .Json(404, "No plan of that name in the store", ServiceErrorWith(ErrorCode::kUnknownPlan))
          .Json(404, FindHttpLayerError(404).description, HttpErrorWith(404))
          .HttpLayer(false));
  WriteOperation(w, "/healthz", "get", "health", "Liveness",
                 Responses().Json(200, "The process serves", Ref("Health")).HttpLayer(false));
  WriteOperation(
      w, "/readyz", "get", "ready", "Readiness",
      Responses()
          .Json(200, "A store is loaded and every Redis endpoint is connected", Ref("Ready"))
          .Json(503, "Not ready; the reason names the endpoints", Ref("NotReady"))
          .HttpLayer(false));
  WriteOperation(w, "/metrics", "get", "metrics", "Prometheus metrics: docs/operations.md",
                 Responses().PlainText(200, "Text exposition format 0.0.4").HttpLayer(false));
  WriteOperation(w, "/openapi.json", "get", "openapi", "This document",
                 Responses().Json(200, "The document", Ref("OpenApiDocument")).HttpLayer(false));
  WriteOperation(
      w, "/admin/reload", "post", "reload", "Load the plan store again, from loopback only",
      [&] {
        w.Key("parameters").BeginArray();
        WriteFlagParameter(w, "dry_run",
                           "1: load the store and answer how it differs, serving it not");
        WriteFlagParameter(
            w, "allow_removals",
            "1: remove plans even if they are in use, see docs/operations.md, Reload");
        w.EndArray();
      },
      Responses()
          .Json(200, "The new store is served (or, a dry run, would load): how it differs",
                Ref("ReloadOutcome"))
          .Json(400, "A query parameter other than dry_run and allow_removals, or not 1 or 0",
                ServiceErrorWith(ErrorCode::kBadRequest))
          .Json(403, "Not from a loopback address", ServiceErrorWith(ErrorCode::kForbidden))
          .Json(409, "The store removes plans in use; the old one keeps serving",
                ServiceErrorWith(ErrorCode::kPlanInUse))
          .Json(422, "The store was refused; the old one keeps serving", Ref("ReloadOutcome"))
          .HttpLayer(true));
  w.EndObject();
}

}  // namespace

std::string OpenApiDocument(const engine::PlanStore& store) {
  const engine::Registry& registry = store.registry();
  std::string out;
  JsonWriter w(out);
  w.BeginObject().Member("openapi", "3.1.0");
  w.Key("info").BeginObject().Member("title", "rankd").Member("version", "1");
  w.Member("description",
           "Ranking over HTTP: the plans of the store being served, against Redis. Registry " +
               registry.digest() + ".");
  w.EndObject();
  w.Key("paths");
  WritePaths(w);

  w.Key("components").BeginObject().Key("schemas").BeginObject();
  WriteErrorDetailSchema(w);
  for (const auto& [name, schema] : kFixedSchemas) w.Key(name).Raw(schema);
  // With no plans, a request names some plan and gets 404.
  const bool any_request = !store.plans().empty() || !store.surfaces().empty();
  w.Key("RankRequest").BeginObject();
  if (!any_request) {
    w.Member("type", "object").Key("required").BeginArray().String("plan").EndArray();
    w.Key("properties").BeginObject().Key("plan").BeginObject().Member("type", "string");
    w.EndObject().EndObject();
  } else {
    w.Key("oneOf").BeginArray();
    for (const auto& [name, plan] : store.plans()) WriteRef(w, "RankRequest." + name);
    for (const auto& [name, surface] : store.surfaces()) WriteRef(w, "RankRequest.surface." + name);
    w.EndArray();
  }
  w.EndObject();
  w.Key("RankResponse").BeginObject();
  if (!any_request) {
    w.Key("not").BeginObject().EndObject();
  } else {
    w.Key("oneOf").BeginArray();
    for (const auto& [name, plan] : store.plans()) WriteRef(w, "RankResponse." + name);
    w.EndArray();
  }
  w.EndObject();
  for (const auto& [name, plan] : store.plans()) {
    w.Key("RankRequest." + name);
    WriteRankRequestSchema(w, *plan);
    w.Key("RankResponse." + name);
    WriteRankResponseSchema(w, *plan, registry);
  }
  // A surface's request answers with its variant's plan's response (with surface and variant).
  for (const auto& [name, surface] : store.surfaces()) {
    w.Key("RankRequest.surface." + name);
    WriteSurfaceRequestSchema(w, *surface);
  }
  w.EndObject();
  w.Key("responses");
  WriteHttpLayerResponseComponents(w);
  w.EndObject().EndObject();
  return out;
}

}  // namespace rankd::service
