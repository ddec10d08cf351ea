#include "schema/schema_validator.h"

#include <re2/re2.h>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validation_visitor.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "json/canonical.h"
#include "json/parser.h"
#include "json/pointer.h"
#include "schema/json_adapter.h"
#include "schema/plan_schema_text.h"

namespace rankd::engine::schema {
namespace {

// The plan schema, compiled once, with an RE2 for each of its `pattern`s.
class CompiledPlanSchema {
 public:
  CompiledPlanSchema() {
    auto parsed = json::Parse(PlanSchemaText());
    if (!parsed)
      throw std::logic_error("the built-in plan schema is not JSON: " + parsed.error().message);
    document_ = std::move(*parsed);
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(JsonAdapter(document_), schema_);
    CollectPatterns(document_);
  }

  const valijson::Schema& schema() const { return schema_; }

  // The compiled `pattern`; null for a pattern the schema does not have.
  const RE2* Pattern(const std::string& pattern) const {
    const auto it = patterns_.find(pattern);
    return it == patterns_.end() ? nullptr : it->second.get();
  }

 private:
  void CollectPatterns(const json::Value& v) {
    if (v.is_array()) {
      for (const json::Value& e : v.array()) CollectPatterns(e);
      return;
    }
    if (!v.is_object()) return;
    for (const json::Member& m : v.object()) {
      if (m.name == "pattern" && m.value.is_string() && patterns_.count(m.value.string()) == 0) {
        auto re = std::make_unique<RE2>(m.value.string(), RE2::Quiet);
        if (!re->ok())
          throw std::logic_error("the built-in plan schema has a pattern RE2 rejects: " +
                                 re->error());
        patterns_.emplace(m.value.string(), std::move(re));
      }
      CollectPatterns(m.value);
    }
  }

  json::Value document_;
  valijson::Schema schema_;
  std::map<std::string, std::unique_ptr<RE2>> patterns_;
};

const CompiledPlanSchema& PlanSchema() {
  static const CompiledPlanSchema schema;
  return schema;
}

// The most reports (violations and the enclosing keywords they fail) collected from one
// artifact: a hostile file could otherwise make valijson keep millions.
constexpr std::size_t kMaxReports = 1000;

// Thrown to stop a validation that has collected kMaxReports.
struct TooManyReports {};

// maxLength (`is_max`) or minLength: a string's length counted in code points, as Ajv counts it
// (a lone surrogate is one).
bool CheckLength(const JsonAdapter& target, const std::vector<std::string>& context,
                 valijson::ValidationResults* results, std::uint64_t limit, bool is_max) {
  if (!target.isString()) return true;
  const std::string& text = target.value().string();
  const auto length =
      static_cast<std::uint64_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
      }));
  if (is_max ? length <= limit : length >= limit) return true;
  if (results != nullptr) {
    results->pushError(context, std::string(is_max ? "String should be no more than "
                                                   : "String should be no fewer than ") +
                                    std::to_string(limit) + " characters in length.");
  }
  return false;
}

}  // namespace
}  // namespace rankd::engine::schema

// valijson's visitor, specialised for the engine's adapter where its checks differ from
// JavaScript's (see schema_validator.h). Explicit specializations of members of the class
// template, declared before any use instantiates them.
namespace valijson {

using rankd::engine::schema::JsonAdapter;

template <>
bool ValidationVisitor<JsonAdapter>::validateSchema(const Subschema& subschema) {
  if (m_results != nullptr && m_results->numErrors() >= rankd::engine::schema::kMaxReports) {
    throw rankd::engine::schema::TooManyReports{};
  }
  if (subschema.getAlwaysInvalid()) return false;
  Subschema::ApplyFunction visit_constraint = [this](const constraints::Constraint& constraint) {
    return constraint.accept(*this);
  };
  // Without results, stop at the first failing constraint; with them, visit every one.
  return m_results == nullptr ? subschema.applyStrict(visit_constraint)
                              : subschema.apply(visit_constraint);
}

// if/then/else without valijson's two visitors copying the context and a result queue per
// evaluation, which made up much of the time of checking a valid plan (each node passes through
// 16 op clauses, each expression through 11): the condition runs without a context, the branch on
// this visitor. The same reports, in the same order: the branch's, then this one.
template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::ConditionalConstraint& constraint) {
  // The condition's failures are not reports, so its visitor needs no context to copy.
  ValidationVisitor<JsonAdapter> condition_visitor(m_target, {}, m_strictTypes, nullptr,
                                                   m_regexesCache);
  const bool condition = condition_visitor.validateSchema(*constraint.getIfSubschema());
  const Subschema* branch =
      condition ? constraint.getThenSubschema() : constraint.getElseSubschema();
  if (branch == nullptr || validateSchema(*branch)) return true;
  if (m_results) {
    m_results->pushError(
        m_context,
        "Failed to validate against a conditional schema set by if-then-else constraints.");
  }
  return false;
}

template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::MaxLengthConstraint& constraint) {
  return rankd::engine::schema::CheckLength(m_target, m_context, m_results,
                                            constraint.getMaxLength(), true);
}

template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::MinLengthConstraint& constraint) {
  return rankd::engine::schema::CheckLength(m_target, m_context, m_results,
                                            constraint.getMinLength(), false);
}

template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::PatternConstraint& constraint) {
  if (!m_target.isString()) return true;
  const std::string pattern = constraint.getPattern<std::string::allocator_type>();
  const RE2* re = rankd::engine::schema::PlanSchema().Pattern(pattern);
  std::unique_ptr<RE2> own;
  if (re == nullptr) {
    own = std::make_unique<RE2>(pattern, RE2::Quiet);
    re = own.get();
  }
  if (re->ok() && RE2::PartialMatch(m_target.value().string(), *re)) return true;
  if (m_results) {
    m_results->pushError(m_context,
                         "Failed to match the regex " + pattern + " of the 'pattern' constraint.");
  }
  return false;
}

template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::UniqueItemsConstraint&) {
  if (!m_target.isArray()) return true;
  const rankd::engine::json::Value::Array& items = m_target.value().array();
  std::vector<std::string> canonical;
  canonical.reserve(items.size());
  for (const auto& item : items) canonical.push_back(rankd::engine::json::CanonicalJson(item));
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&canonical](std::size_t a, std::size_t b) {
    return canonical[a] < canonical[b];
  });
  bool validated = true;
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (canonical[order[i - 1]] != canonical[order[i]]) continue;
    if (!m_results) return false;
    m_results->pushError(m_context, "Elements at indexes #" + std::to_string(order[i - 1]) +
                                        " and #" + std::to_string(order[i]) +
                                        " violate uniqueness constraint.");
    validated = false;
  }
  return validated;
}

template <>
bool ValidationVisitor<JsonAdapter>::visit(const constraints::PropertyNamesConstraint& constraint) {
  if (!m_target.isObject()) return true;
  bool validated = true;
  for (const auto& member : m_target.value().object()) {
    const auto name = rankd::engine::json::Value::String(member.name);
    std::vector<std::string> context = m_context;
    context.push_back("[" + member.name + "]");
    ValidationVisitor<JsonAdapter> name_visitor(JsonAdapter(name), context, m_strictTypes, nullptr,
                                                m_regexesCache);
    if (name_visitor.validateSchema(*constraint.getSubschema())) continue;
    if (!m_results) return false;
    m_results->pushError(context, "The member name " + rankd::engine::json::QuoteJson(member.name) +
                                      " is not allowed by the 'propertyNames' constraint.");
    validated = false;
  }
  return validated;
}

}  // namespace valijson

namespace rankd::engine::schema {
namespace {

constexpr std::string_view kUnknownMemberPrefix =
    "Object contains a property that could not be validated using 'properties' or "
    "'additionalProperties' constraints: '";

// A report of an enclosing keyword, which a violation below it explains.
bool IsEnclosing(std::string_view description) {
  return description.starts_with("Failed to validate") &&
         description != "Failed to validate against exactly one child schema.";
}

// valijson's context ("<root>", "[nodes]", "[0]", ...) as a JSON pointer, resolving each step
// against the document (a step is a member name in an object, an index in an array).
std::string PointerOf(const json::Value& document, const std::vector<std::string>& context) {
  std::string pointer;
  const json::Value* at = &document;
  for (std::size_t i = 1; i < context.size(); ++i) {
    const std::string& step = context[i];
    const std::string_view token = step.size() >= 2 && step.front() == '[' && step.back() == ']'
                                       ? std::string_view(step).substr(1, step.size() - 2)
                                       : std::string_view(step);
    if (at != nullptr && at->is_array()) {
      std::size_t index = 0;
      std::from_chars(token.data(), token.data() + token.size(), index);
      json::AppendPointerIndex(pointer, index);
      at = index < at->array().size() ? &at->array()[index] : nullptr;
    } else {
      json::AppendPointerName(pointer, token);
      at = at != nullptr ? at->Find(token) : nullptr;
    }
  }
  return pointer;
}

// Whether `pointer` is `ancestor` or lies below it.
bool IsAtOrBelow(std::string_view pointer, std::string_view ancestor) {
  return pointer.starts_with(ancestor) &&
         (pointer.size() == ancestor.size() || pointer[ancestor.size()] == '/');
}

std::string Describe(const json::Value& document, const std::string& pointer,
                     std::string description) {
  if (description == "Value type not permitted by 'type' constraint.") {
    if (const json::Value* v = json::ResolvePointer(document, pointer)) {
      description += " (it is a" + std::string(v->is_array() || v->is_object() ? "n " : " ") +
                     std::string(json::Value::TypeName(v->type())) + ")";
    }
  }
  return "plan JSON " + (pointer.empty() ? std::string("(the document)") : pointer) + ": " +
         description;
}

}  // namespace

std::vector<SchemaViolation> ValidatePlanSchema(const json::Value& artifact) {
  const CompiledPlanSchema& compiled = PlanSchema();
  valijson::ValidationResults results;
  std::unordered_map<std::string, std::regex> unused_regex_cache;  // patterns run RE2 (above)
  bool valid = false;
  bool truncated = false;
  try {
    valijson::ValidationVisitor<JsonAdapter> visitor(JsonAdapter(artifact), {"<root>"}, true,
                                                     &results, unused_regex_cache);
    valid = visitor.validateSchema(compiled.schema());
  } catch (const TooManyReports&) {
    truncated = true;
  } catch (const std::exception& e) {
    return {SchemaViolation{"", std::string("plan JSON: the schema check failed: ") + e.what()}};
  }
  if (valid) return {};

  struct Report {
    std::string pointer;
    std::string description;
    bool enclosing;
  };
  std::vector<Report> reports;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string pointer = PointerOf(artifact, error.context);
    if (error.description.starts_with(kUnknownMemberPrefix) && error.description.ends_with("'.")) {
      const std::string_view rest =
          std::string_view(error.description).substr(kUnknownMemberPrefix.size());
      json::AppendPointerName(pointer, rest.substr(0, rest.size() - 2));
    }
    const bool enclosing = IsEnclosing(error.description);
    reports.push_back(Report{std::move(pointer), std::move(error.description), enclosing});
  }
  std::vector<SchemaViolation> violations;
  for (const Report& r : reports) {
    const bool explained =
        r.enclosing && std::any_of(reports.begin(), reports.end(), [&r](const Report& o) {
          return !o.enclosing && IsAtOrBelow(o.pointer, r.pointer);
        });
    if (explained) continue;
    violations.push_back(SchemaViolation{r.pointer, Describe(artifact, r.pointer, r.description)});
  }
  if (violations.empty())
    violations.push_back(SchemaViolation{"", "plan JSON does not match the plan schema"});
  if (truncated) {
    violations.push_back(SchemaViolation{"", "plan JSON: the schema check stopped after " +
                                                 std::to_string(kMaxReports) + " reports"});
  }
  return violations;
}

}  // namespace rankd::engine::schema
