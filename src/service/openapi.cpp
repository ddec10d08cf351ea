#include "rankd/service/openapi.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string_view>
#include <variant>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/json/json_text.h"

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

// What the HTTP layer answers on its own (docs/http.md): a short reason as plain text.
constexpr std::string_view kPlainText = R"({"text/plain":{"schema":{"type":"string"}}})";

// A /rank error answer whose code is one of `codes`.
std::string RankErrorWith(std::initializer_list<std::string_view> codes) {
  std::string list;
  for (const std::string_view code : codes) list += (list.empty() ? "" : ",") + QuoteJson(code);
  return R"({"allOf":[)" + Ref("RankError") +
         R"(,{"properties":{"error":{"properties":{"code":{"enum":[)" + list + "]}}}}}]}";
}

// A plain service error (the endpoints other than /rank) with code `code`.
std::string ServiceErrorWith(std::string_view code) {
  return R"({"allOf":[)" + Ref("ServiceError") +
         R"(,{"properties":{"error":{"properties":{"code":{"const":)" + QuoteJson(code) + "}}}}}]}";
}

// The answers every operation can get from the HTTP layer before a handler runs.
std::string HttpLayerResponses(bool has_body) {
  std::string out = ",\"431\":" + Response("The request head is over the limit", kPlainText);
  if (has_body) out += ",\"413\":" + Response("The request body is over the limit", kPlainText);
  return out;
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
  if (pattern) {
    out +=
        R"(,"format":"regex","description":"an RE2 pattern, compiled with the flags the plan uses it with")";
  }
  AppendScalar(out += ",\"default\":", param.default_value);
  return out + "}";
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
  out += R"(,"deadline_ms":{"type":"integer","minimum":1,"maximum":60000})";
  out +=
      R"(,"explain":{"type":"boolean"},"request_id":{"type":"string","maxLength":128,"pattern":"^[ -~]*$"}}})";
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
  out += R"(},"outputs":{"type":"object","additionalProperties":false,"required":[)" + required +
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
  "error":{"$ref":"#/components/schemas/ErrorDetail"}}},
"ServiceError":{"type":"object","additionalProperties":false,"required":["error"],"properties":{
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
  "ran_on":{"enum":["loop","pool"]},"cpu_us":{"type":"integer","minimum":0}}},
"Explain":{"type":"object","additionalProperties":false,"required":["nodes","totals"],"properties":{
  "nodes":{"type":"array","items":{"$ref":"#/components/schemas/ExplainNode"}},
  "totals":{"type":"object","additionalProperties":false,"required":["redis_commands","round_trips","cpu_us","elapsed_us"],"properties":{
    "redis_commands":{"type":"integer","minimum":0},"round_trips":{"type":"integer","minimum":0},
    "cpu_us":{"type":"integer","minimum":0},"elapsed_us":{"type":"integer","minimum":0}}}}},
"PlanList":{"type":"object","additionalProperties":false,"required":["registry_digest","loaded_at","plans"],"properties":{
  "registry_digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"},
  "plans":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["name","digest","loaded_at"],"properties":{
    "name":{"type":"string"},"digest":{"type":"string"},"loaded_at":{"type":"string","format":"date-time"}}}}}},
"PlanArtifact":{"type":"object","description":"the plan's artifact as rankc wrote it: docs/plan-format.md, schema/plan.v1.schema.json"},
"Health":{"type":"object","additionalProperties":false,"required":["status"],"properties":{"status":{"const":"serving"}}},
"Ready":{"type":"object","additionalProperties":false,"required":["ready"],"properties":{"ready":{"const":true}}},
"NotReady":{"type":"object","additionalProperties":false,"required":["ready","reason"],"properties":{"ready":{"const":false},"reason":{"type":"string"}}},
"ReloadOutcome":{"type":"object","additionalProperties":false,"required":["loaded","message"],"properties":{"loaded":{"type":"boolean"},"message":{"type":"string"}}},
"OpenApiDocument":{"type":"object","description":"this document"}
)json";

std::string Paths() {
  std::string out = "{";
  out += R"("/rank":{"post":{"operationId":"rank","summary":"Rank for a request: docs/engine.md",)";
  out += R"("requestBody":{"required":true,"content":)" + Json(Ref("RankRequest")) + "},";
  out += "\"responses\":{\"200\":" +
         Response("The ranking (also a degraded one: see degraded)", Json(Ref("RankResponse")));
  out += ",\"400\":" +
         Response("A malformed request or param (or malformed HTTP, as plain text)",
                  "{\"application/json\":{\"schema\":" +
                      RankErrorWith({engine::WireName(engine::ErrorCode::kBadRequest),
                                     engine::WireName(engine::ErrorCode::kInvalidParam)}) +
                      "},\"text/plain\":{\"schema\":{\"type\":\"string\"}}}");
  out += ",\"404\":" +
         Response("No plan of that name in the store",
                  Json(RankErrorWith({engine::WireName(engine::ErrorCode::kUnknownPlan)})));
  out +=
      ",\"500\":" + Response("An internal error, the message says what",
                             Json(RankErrorWith({engine::WireName(engine::ErrorCode::kInternal)})));
  out += ",\"502\":" +
         Response("A Redis command of a node with on_error fail failed",
                  Json(RankErrorWith({engine::WireName(engine::ErrorCode::kUpstreamError)})));
  out += ",\"503\":" +
         Response("The shard ranks its limit of requests; retry later",
                  Json(RankErrorWith({engine::WireName(engine::ErrorCode::kOverloaded)})));
  out += ",\"504\":" +
         Response("A node with on_error fail, or the request, ran past its deadline",
                  Json(RankErrorWith({engine::WireName(engine::ErrorCode::kDeadlineExceeded)})));
  out += HttpLayerResponses(true) + "}}}";

  out +=
      R"(,"/plans":{"get":{"operationId":"listPlans","summary":"The plans being served","responses":{"200":)" +
      Response("The store's plans", Json(Ref("PlanList"))) + HttpLayerResponses(false) + "}}}";
  out += R"(,"/plans/{name}":{"get":{"operationId":"getPlan","summary":"A plan's artifact",)";
  out +=
      R"("parameters":[{"name":"name","in":"path","required":true,"schema":{"type":"string"}}],)";
  out += "\"responses\":{\"200\":" + Response("The artifact", Json(Ref("PlanArtifact")));
  out += ",\"404\":" +
         Response("No plan of that name in the store",
                  Json(ServiceErrorWith(engine::WireName(engine::ErrorCode::kUnknownPlan))));
  out += HttpLayerResponses(false) + "}}}";
  out += R"(,"/healthz":{"get":{"operationId":"health","summary":"Liveness","responses":{"200":)" +
         Response("The process serves", Json(Ref("Health"))) + HttpLayerResponses(false) + "}}}";
  out += R"(,"/readyz":{"get":{"operationId":"ready","summary":"Readiness","responses":{"200":)" +
         Response("A store is loaded and every Redis endpoint is connected", Json(Ref("Ready")));
  out += ",\"503\":" + Response("Not ready; the reason names the endpoints", Json(Ref("NotReady")));
  out += HttpLayerResponses(false) + "}}}";
  out +=
      R"(,"/metrics":{"get":{"operationId":"metrics","summary":"Prometheus metrics: docs/operations.md","responses":{"200":)" +
      Response("Text exposition format 0.0.4", kPlainText) + HttpLayerResponses(false) + "}}}";
  out +=
      R"(,"/openapi.json":{"get":{"operationId":"openapi","summary":"This document","responses":{"200":)" +
      Response("The document", Json(Ref("OpenApiDocument"))) + HttpLayerResponses(false) + "}}}";
  out +=
      R"(,"/admin/reload":{"post":{"operationId":"reload","summary":"Load the plan store again, from loopback only","responses":{"200":)" +
      Response("The new store is served", Json(Ref("ReloadOutcome")));
  out += ",\"403\":" +
         Response("Not from a loopback address",
                  Json(ServiceErrorWith(engine::WireName(engine::ErrorCode::kForbidden))));
  out += ",\"422\":" +
         Response("The store was refused; the old one keeps serving", Json(Ref("ReloadOutcome")));
  out += HttpLayerResponses(true) + "}}}";
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
  out += per_plan + "}}}";
  return out;
}

}  // namespace rankd::service
