// Parsing ranking requests and binding their params (api/rank_request.h; docs/engine.md,
// "Requests").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "api/item_trace.h"
#include "json/number_format.h"
#include "json/parser.h"
#include "rankd/engine/api/rank_request.h"
#include "vm/regex_cache.h"

namespace rankd::engine {
namespace {

RankError BadRequest(std::string message) {
  return RankError{ErrorCode::kBadRequest, std::move(message)};
}
RankError InvalidParam(std::string message) {
  return RankError{ErrorCode::kInvalidParam, std::move(message)};
}

}  // namespace

std::optional<std::string> RequestIdProblem(std::string_view id, std::string_view field) {
  if (id.size() > kMaxRequestIdBytes) {
    return std::string(field) + " must be at most " + std::to_string(kMaxRequestIdBytes) +
           " bytes, not " + std::to_string(id.size());
  }
  for (std::size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x20 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      return std::string(field) + " must be printable ASCII (0x20 to 0x7E); byte " +
             std::to_string(i) + " is " + hex;
    }
  }
  return std::nullopt;
}

std::string_view TypeName(const json::Value& v) { return json::Value::TypeName(v.type()); }

// An integer field: an integer literal within [min, max].
std::expected<std::int64_t, RankError> IntegerField(const json::Value& v, std::string_view field,
                                                    std::int64_t min, std::int64_t max) {
  const std::string range = std::to_string(min) + " to " + std::to_string(max);
  if (!v.is_number()) {
    return std::unexpected(BadRequest(std::string(field) + " must be an integer from " + range +
                                      ", not " + WithArticle(TypeName(v))));
  }
  const std::optional<std::int64_t> n = v.exact_integer();
  if (!n || *n < min || *n > max) {
    return std::unexpected(BadRequest(std::string(field) + " must be an integer from " + range));
  }
  return *n;
}

// A param value as written: int64 for an integer literal within int64, else the number; strings
// and bools as such; anything else is null here and named by its JSON type in BindParams.
RequestParam ToParam(const json::Member& m) {
  RequestParam p;
  p.name = m.name;
  p.json_type = std::string(TypeName(m.value));
  switch (m.value.type()) {
    case json::Value::Type::kNumber:
      if (const std::optional<std::int64_t> n = m.value.exact_integer()) {
        p.value = *n;
      } else {
        p.value = m.value.number();
      }
      break;
    case json::Value::Type::kString:
      p.value = m.value.string();
      break;
    case json::Value::Type::kBool:
      p.value = m.value.bool_value();
      break;
    default:
      break;
  }
  return p;
}

std::expected<RankRequest, RankError> ParseRankRequest(std::string_view body) {
  std::expected<json::Value, json::ParseError> parsed = json::Parse(body);
  if (!parsed) {
    return std::unexpected(BadRequest("malformed JSON " + parsed.error().message));
  }
  const json::Value& doc = *parsed;
  if (!doc.is_object()) {
    return std::unexpected(
        BadRequest("the request must be a JSON object, not " + WithArticle(TypeName(doc))));
  }
  RankRequest request;
  bool has_plan = false;
  bool has_surface = false;
  for (const json::Member& m : doc.object()) {
    const json::Value& v = m.value;
    if (m.name == "plan") {
      if (!v.is_string() || v.string().empty()) {
        return std::unexpected(BadRequest("plan must be a plan's name (a non-empty string)"));
      }
      request.plan = v.string();
      has_plan = true;
    } else if (m.name == "surface") {
      if (!v.is_string() || v.string().empty()) {
        return std::unexpected(BadRequest("surface must be a surface's name (a non-empty string)"));
      }
      request.surface = v.string();
      has_surface = true;
    } else if (m.name == "viewer_id") {
      auto id = IntegerField(v, "viewer_id", 0, INT64_MAX);
      if (!id) return std::unexpected(id.error());
      request.viewer_id = *id;
    } else if (m.name == "params") {
      if (!v.is_object()) {
        return std::unexpected(BadRequest("params must be an object of param values, not " +
                                          WithArticle(TypeName(v))));
      }
      for (const json::Member& p : v.object()) request.params.push_back(ToParam(p));
    } else if (m.name == "deadline_ms") {
      auto ms = IntegerField(v, "deadline_ms", 1, 60000);
      if (!ms) return std::unexpected(ms.error());
      request.deadline_ms = *ms;
    } else if (m.name == "explain") {
      if (!v.is_bool()) {
        return std::unexpected(
            BadRequest("explain must be true or false, not " + WithArticle(TypeName(v))));
      }
      request.explain = v.bool_value();
    } else if (m.name == "trace_ids") {
      if (!v.is_array() || v.array().empty() || v.array().size() > kMaxTraceIds) {
        return std::unexpected(BadRequest(
            "trace_ids must be an array of 1 to " + std::to_string(kMaxTraceIds) + " ids" +
            (v.is_array() ? ", not " + std::to_string(v.array().size())
                          : ", not " + WithArticle(TypeName(v)))));
      }
      std::set<std::int64_t> seen;
      for (std::size_t i = 0; i < v.array().size(); ++i) {
        auto id = IntegerField(v.array()[i], "trace_ids[" + std::to_string(i) + "]", INT64_MIN,
                               INT64_MAX);
        if (!id) return std::unexpected(id.error());
        if (!seen.insert(*id).second) {
          return std::unexpected(
              BadRequest("trace_ids names id " + std::to_string(*id) + " twice"));
        }
        request.trace_ids.push_back(*id);
      }
    } else if (m.name == "capture") {
      if (!v.is_bool()) {
        return std::unexpected(
            BadRequest("capture must be true or false, not " + WithArticle(TypeName(v))));
      }
      request.capture = v.bool_value();
    } else if (m.name == "request_id") {
      if (!v.is_string()) {
        return std::unexpected(
            BadRequest("request_id must be a string, not " + WithArticle(TypeName(v))));
      }
      if (std::optional<std::string> problem = RequestIdProblem(v.string(), "request_id"))
        return std::unexpected(BadRequest(std::move(*problem)));
      request.request_id = v.string();
    } else {
      return std::unexpected(
          BadRequest("unknown field \"" + m.name +
                     "\" (a request has plan or surface, viewer_id, params, deadline_ms, explain, "
                     "trace_ids, capture and request_id)"));
    }
  }
  if (has_plan && has_surface) {
    return std::unexpected(
        BadRequest("plan and surface are exclusive: a request names a plan or a surface"));
  }
  if (!has_plan && !has_surface) {
    return std::unexpected(BadRequest("plan or surface is required"));
  }
  // A trace is part of explain.
  if (!request.trace_ids.empty()) request.explain = true;
  return request;
}

namespace {

std::string Bounds(const PlanParam& p) {
  std::string out;
  if (p.min) {
    out += " >= ";
    json::AppendEcmaScriptNumber(out, *p.min);
  }
  if (p.max) {
    out += p.min ? " and <= " : " <= ";
    json::AppendEcmaScriptNumber(out, *p.max);
  }
  return out;
}

}  // namespace

std::expected<ParamBinding, RankError> BindParams(const CompiledPlan& compiled,
                                                  const std::vector<RequestParam>& overrides) {
  const Plan& plan = compiled.plan();
  ParamBinding binding = ParamBinding::Defaults(plan.params);
  for (const RequestParam& o : overrides) {
    // The request names its params: the one name lookup binding needs.
    const auto at = std::find_if(plan.params.begin(), plan.params.end(),
                                 [&o](const PlanParam& p) { return p.name == o.name; });
    const std::size_t slot = static_cast<std::size_t>(at - plan.params.begin());
    if (at == plan.params.end()) {
      return std::unexpected(
          InvalidParam("plan " + plan.name + " has no param \"" + o.name + "\""));
    }
    const PlanParam& p = plan.params[slot];
    const std::string what = "param " + o.name + " is " + WithArticle(ValueTypeName(p.type));
    Scalar value;
    switch (p.type) {
      case ValueType::kInt:
        if (!std::holds_alternative<std::int64_t>(o.value)) {
          return std::unexpected(
              InvalidParam(what + ": expected an integer, got " +
                           (std::holds_alternative<double>(o.value)
                                ? std::string("a number with a fraction or exponent")
                                : WithArticle(o.json_type))));
        }
        value = o.value;
        break;
      case ValueType::kFloat:
        if (std::holds_alternative<std::int64_t>(o.value)) {
          value = static_cast<double>(std::get<std::int64_t>(o.value));
        } else if (std::holds_alternative<double>(o.value)) {
          value = o.value;
        } else {
          return std::unexpected(
              InvalidParam(what + ": expected a number, got " + WithArticle(o.json_type)));
        }
        break;
      case ValueType::kString:
        if (!std::holds_alternative<std::string>(o.value)) {
          return std::unexpected(
              InvalidParam(what + ": expected a string, got " + WithArticle(o.json_type)));
        }
        value = o.value;
        break;
      case ValueType::kBool:
        if (!std::holds_alternative<bool>(o.value)) {
          return std::unexpected(
              InvalidParam(what + ": expected true or false, got " + WithArticle(o.json_type)));
        }
        value = o.value;
        break;
    }
    if (p.type == ValueType::kInt || p.type == ValueType::kFloat) {
      const double x = std::holds_alternative<double>(value)
                           ? std::get<double>(value)
                           : static_cast<double>(std::get<std::int64_t>(value));
      if ((p.min && x < *p.min) || (p.max && x > *p.max)) {
        return std::unexpected(InvalidParam("param " + o.name + " must be" + Bounds(p)));
      }
    }
    if (p.type == ValueType::kString) {
      const std::size_t size = std::get<std::string>(value).size();
      if (p.max_bytes && size > static_cast<std::size_t>(*p.max_bytes)) {
        return std::unexpected(InvalidParam("param " + o.name + " must be at most " +
                                            std::to_string(*p.max_bytes) + " bytes, got " +
                                            std::to_string(size)));
      }
      for (const std::string& flags : compiled.regex_flags()[slot]) {
        std::string error;
        if (!CachedRegex(std::get<std::string>(value), flags, &error)) {
          return std::unexpected(
              InvalidParam("param " + o.name + " is not a valid RE2 pattern: " + error));
        }
      }
    }
    binding.values[slot] = std::move(value);
  }
  return binding;
}

std::vector<ParamPattern> UncompiledParamPatterns(const CompiledPlan& compiled,
                                                  const std::vector<RequestParam>& overrides) {
  const Plan& plan = compiled.plan();
  std::vector<ParamPattern> out;
  for (const RequestParam& o : overrides) {
    if (!std::holds_alternative<std::string>(o.value)) continue;  // BindParams refuses it
    const auto at = std::find_if(plan.params.begin(), plan.params.end(),
                                 [&o](const PlanParam& p) { return p.name == o.name; });
    if (at == plan.params.end() || at->type != ValueType::kString) continue;
    const std::string& pattern = std::get<std::string>(o.value);
    if (at->max_bytes && pattern.size() > static_cast<std::size_t>(*at->max_bytes)) {
      continue;  // BindParams refuses it before compiling
    }
    for (const std::string& flags :
         compiled.regex_flags()[static_cast<std::size_t>(at - plan.params.begin())]) {
      if (!RegexCached(pattern, flags)) out.push_back({pattern, flags});
    }
  }
  return out;
}

void CompileParamPatterns(const std::vector<ParamPattern>& patterns) {
  for (const ParamPattern& p : patterns) (void)CachedRegex(p.pattern, p.flags, nullptr);
}

}  // namespace rankd::engine
