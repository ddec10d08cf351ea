// Parsing ranking requests and binding their params (api/rank_request.h; docs/engine.md,
// "Requests").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "json/number_format.h"
#include "json/parser.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/runtime/debug_check.h"
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

namespace {

std::string_view TypeName(const json::Value& v) { return json::Value::TypeName(v.type()); }

// "<field> must be <expect>, not <a type>": a value of the wrong JSON type.
RankError WrongType(const RequestFieldSpec& spec, std::string_view field, const json::Value& v) {
  return BadRequest(std::string(field) + " must be " + std::string(spec.expect) + ", not " +
                    WithArticle(TypeName(v)));
}

// Why the string `s` breaks `spec`'s bounds, naming it `field`; nullopt when it keeps them.
std::optional<std::string> StringProblem(const RequestFieldSpec& spec, std::string_view s,
                                         std::string_view field) {
  RANKD_D_ASSERT(spec.type == RequestFieldType::kString);
  if (s.size() < spec.min_bytes) return std::string(field) + " must be " + std::string(spec.expect);
  if (s.size() > spec.max_bytes) {
    return std::string(field) + " must be at most " + std::to_string(spec.max_bytes) +
           " bytes, not " + std::to_string(s.size());
  }
  if (!spec.printable_ascii) return std::nullopt;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      return std::string(field) + " must be printable ASCII (0x20 to 0x7E); byte " +
             std::to_string(i) + " is " + hex;
    }
  }
  return std::nullopt;
}

// An integer within [spec.min, spec.max], named `field`.
std::expected<std::int64_t, RankError> IntegerField(const RequestFieldSpec& spec,
                                                    const json::Value& v, std::string_view field) {
  const std::string range = std::to_string(spec.min) + " to " + std::to_string(spec.max);
  if (!v.is_number()) {
    return std::unexpected(BadRequest(std::string(field) + " must be an integer from " + range +
                                      ", not " + WithArticle(TypeName(v))));
  }
  const std::optional<std::int64_t> n = v.exact_integer();
  if (!n || *n < spec.min || *n > spec.max) {
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

// Reads one request field into its RankRequest member: an overload per field type (and member
// type), each checking the bounds its spec (spec/request.toml) gives. Returns the field's error.
struct RequestFieldReader {
  using Result = std::optional<RankError>;

  Result operator()(const RequestFieldSpec& spec, const json::Value& v, std::string& out) const {
    RANKD_D_ASSERT(spec.type == RequestFieldType::kString);
    if (!v.is_string()) return WrongType(spec, spec.name, v);
    if (std::optional<std::string> problem = StringProblem(spec, v.string(), spec.name))
      return BadRequest(std::move(*problem));
    out = v.string();
    return std::nullopt;
  }
  Result operator()(const RequestFieldSpec& spec, const json::Value& v,
                    std::optional<std::string>& out) const {
    std::string s;
    if (Result error = (*this)(spec, v, s)) return error;
    out = std::move(s);
    return std::nullopt;
  }
  Result operator()(const RequestFieldSpec& spec, const json::Value& v,
                    std::optional<std::int64_t>& out) const {
    RANKD_D_ASSERT(spec.type == RequestFieldType::kInt);
    auto n = IntegerField(spec, v, spec.name);
    if (!n) return n.error();
    out = *n;
    return std::nullopt;
  }
  Result operator()(const RequestFieldSpec& spec, const json::Value& v, bool& out) const {
    RANKD_D_ASSERT(spec.type == RequestFieldType::kBool);
    if (!v.is_bool()) return WrongType(spec, spec.name, v);
    out = v.bool_value();
    return std::nullopt;
  }
  Result operator()(const RequestFieldSpec& spec, const json::Value& v,
                    std::vector<std::int64_t>& out) const {
    RANKD_D_ASSERT(spec.type == RequestFieldType::kIntList);
    if (!v.is_array()) return WrongType(spec, spec.name, v);
    const json::Value::Array& items = v.array();
    if (items.size() < spec.min_items || items.size() > spec.max_items) {
      return BadRequest(std::string(spec.name) + " must be " + std::string(spec.expect) +
                        ", not " + std::to_string(items.size()));
    }
    std::set<std::int64_t> seen;
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto n = IntegerField(spec, items[i], std::string(spec.name) + "[" + std::to_string(i) + "]");
      if (!n) return n.error();
      if (spec.distinct && !seen.insert(*n).second) {
        return BadRequest(std::string(spec.name) + " names " + std::string(spec.item) + " " +
                          std::to_string(*n) + " twice");
      }
      out.push_back(*n);
    }
    return std::nullopt;
  }
  Result operator()(const RequestFieldSpec& spec, const json::Value& v,
                    std::vector<RequestParam>& out) const {
    RANKD_D_ASSERT(spec.type == RequestFieldType::kParams);
    if (!v.is_object()) return WrongType(spec, spec.name, v);
    for (const json::Member& p : v.object()) out.push_back(ToParam(p));
    return std::nullopt;
  }
};

}  // namespace

std::optional<std::string> RequestIdProblem(std::string_view id, std::string_view field) {
  return StringProblem(request_fields::kRequestId, id, field);
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
  for (const json::Member& m : doc.object()) {
    const auto error = ReadRankRequestField(m.name, m.value, request, RequestFieldReader{});
    if (!error) {
      return std::unexpected(BadRequest("unknown field \"" + m.name + "\" (a request has " +
                                        std::string(kRequestFieldList) + ")"));
    }
    if (*error) return std::unexpected(std::move(**error));
  }
  // The rules between fields (docs/engine.md, "Requests").
  if (!request.plan.empty() && !request.surface.empty()) {
    return std::unexpected(
        BadRequest("plan and surface are exclusive: a request names a plan or a surface"));
  }
  if (request.plan.empty() && request.surface.empty()) {
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
