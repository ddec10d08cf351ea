// ReadSurfaces (store/surfaces_loader.h): surfaces.toml's rules, docs/experiments.md ("The file").
#include "store/surfaces_loader.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <set>
#include <utility>

#include "json/pointer.h"
#include "problems/problem_codes.h"
#include "registry/registry_checks.h"
#include "registry/toml_reader.h"

namespace rankd::engine {
namespace {

// A surface's or a variant's name: a registry name of at most this many bytes, as plan names.
constexpr std::size_t kMaxNameBytes = 64;
// A variant's weight is an integer from 1 to this: the sum of the weights times
// kAssignmentBuckets stays far inside 64 bits.
constexpr std::int64_t kMaxWeight = 1000000;
// A shadow's deadline_ms is at most this, as a node's timeout_ms (docs/plan-format.md).
constexpr std::int64_t kMaxDeadlineMs = 60000;

class SurfaceChecker {
 public:
  SurfaceChecker(const std::string& file, const TomlDocument& document,
                 const std::function<bool(std::string_view)>& plan_exists,
                 std::vector<LoadProblem>& problems)
      : file_(file), document_(document), plan_exists_(plan_exists), problems_(problems) {}

  SurfaceMap Check() {
    SurfaceMap surfaces;
    const json::Value& top = document_.value;
    HasOnly(top, "", {"surfaces"});
    const json::Value* tables = top.Find("surfaces");
    if (tables == nullptr) return surfaces;
    if (!tables->is_object()) {
      Problem("/surfaces", "surfaces must be a table of surfaces ([surfaces.<name>])");
      return surfaces;
    }
    for (const json::Member& m : tables->object()) {
      const std::string pointer = json::PointerTo("/surfaces", m.name);
      std::optional<Surface> surface = CheckSurface(m.name, m.value, pointer);
      if (surface) surfaces.emplace(m.name, std::make_shared<const Surface>(std::move(*surface)));
    }
    return surfaces;
  }

 private:
  std::optional<Surface> CheckSurface(const std::string& name, const json::Value& value,
                                      const std::string& pointer) {
    bool ok = CheckName(name, pointer, "a surface");
    if (!value.is_object()) {
      Problem(pointer, "surface " + name + " must be a table with salt and variants");
      return std::nullopt;
    }
    ok = HasOnly(value, pointer, {"salt", "variants", "shadow"}) && ok;
    ok = HasAll(value, pointer, {"salt", "variants"}) && ok;
    Surface surface;
    surface.name = name;
    const json::Value* salt = value.Find("salt");
    if (salt != nullptr && (!salt->is_string() || salt->string().empty())) {
      Problem(pointer + "/salt", "salt must be a non-empty string");
      ok = false;
    } else if (salt != nullptr) {
      surface.salt = salt->string();
    }
    const json::Value* variants = value.Find("variants");
    if (variants != nullptr && (!variants->is_array() || variants->array().empty())) {
      Problem(pointer + "/variants",
              "variants must be a non-empty array of tables ([[surfaces." + name + ".variants]])");
      return std::nullopt;
    }
    if (variants == nullptr) return std::nullopt;
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < variants->array().size(); ++i) {
      const std::string at = json::PointerTo(pointer + "/variants", i);
      std::optional<SurfaceVariant> variant = CheckVariant(variants->array()[i], at);
      if (!variant) {
        ok = false;
        continue;
      }
      if (!names.insert(variant->name).second) {
        Problem(at + "/name", "variant \"" + variant->name + "\" is named twice in surface " +
                                  name + "; variant names are unique within a surface");
        ok = false;
      }
      surface.variants.push_back(std::move(*variant));
    }
    if (const json::Value* shadow = value.Find("shadow")) {
      surface.shadow = CheckShadow(name, *shadow, pointer + "/shadow");
      ok = surface.shadow.has_value() && ok;
    }
    if (!ok) return std::nullopt;
    SetBucketRanges(surface.variants);
    return surface;
  }

  std::optional<SurfaceShadow> CheckShadow(const std::string& surface, const json::Value& value,
                                           const std::string& pointer) {
    if (!value.is_object()) {
      Problem(pointer,
              "shadow must be a table with plan and sample ([surfaces." + surface + ".shadow])");
      return std::nullopt;
    }
    bool ok = HasOnly(value, pointer, {"plan", "sample", "deadline_ms"});
    ok = HasAll(value, pointer, {"plan", "sample"}) && ok;
    SurfaceShadow shadow;
    ok = CheckPlan(value.Find("plan"), pointer + "/plan", shadow.plan) && ok;
    const json::Value* sample = value.Find("sample");
    if (sample != nullptr &&
        !(sample->is_number() && sample->number() > 0 && sample->number() <= 1)) {
      Problem(pointer + "/sample",
              "sample must be a number over 0 and at most 1 (the share of the surface's requests)");
      ok = false;
    } else if (sample != nullptr) {
      shadow.sample = sample->number();
    }
    const json::Value* deadline = value.Find("deadline_ms");
    if (deadline != nullptr &&
        !(deadline->is_number() && deadline->integer_literal() && deadline->number() >= 1 &&
          deadline->number() <= static_cast<double>(kMaxDeadlineMs))) {
      Problem(pointer + "/deadline_ms",
              "deadline_ms must be an integer from 1 to " + std::to_string(kMaxDeadlineMs));
      ok = false;
    } else if (deadline != nullptr) {
      shadow.deadline_ms = static_cast<std::int64_t>(deadline->number());
    }
    if (!ok) return std::nullopt;
    return shadow;
  }

  // A plan's name naming a plan of the store, into `plan`; true when it is one.
  bool CheckPlan(const json::Value* value, const std::string& pointer, std::string& plan) {
    if (value == nullptr) return false;
    if (!value->is_string()) {
      Problem(pointer, "plan must be a plan's name (a string)");
      return false;
    }
    if (!plan_exists_(value->string())) {
      Problem(pointer, "no plan \"" + value->string() + "\" in the plan store");
      return false;
    }
    plan = value->string();
    return true;
  }

  std::optional<SurfaceVariant> CheckVariant(const json::Value& value, const std::string& pointer) {
    if (!value.is_object()) {
      Problem(pointer, "a variant must be a table with name, plan and weight");
      return std::nullopt;
    }
    bool ok = HasExactly(value, pointer, {"name", "plan", "weight"});
    SurfaceVariant variant;
    const json::Value* name = value.Find("name");
    if (name != nullptr && !name->is_string()) {
      Problem(pointer + "/name", "name must be a string");
      ok = false;
    } else if (name != nullptr) {
      ok = CheckName(name->string(), pointer + "/name", "a variant") && ok;
      variant.name = name->string();
    }
    const json::Value* plan = value.Find("plan");
    if (plan != nullptr) ok = CheckPlan(plan, pointer + "/plan", variant.plan) && ok;
    const json::Value* weight = value.Find("weight");
    if (weight != nullptr &&
        !(weight->is_number() && weight->integer_literal() && weight->number() >= 1 &&
          weight->number() <= static_cast<double>(kMaxWeight))) {
      Problem(pointer + "/weight",
              "weight must be an integer from 1 to " + std::to_string(kMaxWeight));
      ok = false;
    } else if (weight != nullptr) {
      variant.weight = static_cast<std::int64_t>(weight->number());
    }
    if (!ok) return std::nullopt;
    return variant;
  }

  bool CheckName(const std::string& name, const std::string& pointer, std::string_view what) {
    if (IsRegistryName(name) && name.size() <= kMaxNameBytes) return true;
    Problem(pointer, "\"" + name + "\" is not " + std::string(what) +
                         " name (^[a-z][a-z0-9_]*$, at most " + std::to_string(kMaxNameBytes) +
                         " bytes)");
    return false;
  }

  // Reports a key outside `allowed`; true when there is none.
  bool HasOnly(const json::Value& table, const std::string& pointer,
               std::initializer_list<std::string_view> allowed) {
    bool ok = true;
    for (const json::Member& m : table.object()) {
      if (std::find(allowed.begin(), allowed.end(), m.name) == allowed.end()) {
        std::string expected;
        for (const std::string_view a : allowed)
          expected += (expected.empty() ? "" : ", ") + std::string(a);
        Problem(json::PointerTo(pointer, m.name),
                "unknown key \"" + m.name + "\" (expected " + expected + ")");
        ok = false;
      }
    }
    return ok;
  }

  // Reports a key outside `allowed` and a missing one; true when the table has exactly them.
  bool HasExactly(const json::Value& table, const std::string& pointer,
                  std::initializer_list<std::string_view> allowed) {
    const bool only = HasOnly(table, pointer, allowed);
    return HasAll(table, pointer, allowed) && only;
  }

  // Reports a missing key of `required`; true when there is none.
  bool HasAll(const json::Value& table, const std::string& pointer,
              std::initializer_list<std::string_view> required) {
    bool ok = true;
    for (const std::string_view name : required) {
      if (table.Find(name) == nullptr) {
        Problem(pointer, "missing key \"" + std::string(name) + "\"");
        ok = false;
      }
    }
    return ok;
  }

  void Problem(const std::string& pointer, std::string message) {
    const std::size_t line = LineOf(document_.lines, pointer);
    if (line > 0) message += " (line " + std::to_string(line) + ")";
    problems_.push_back(
        LoadProblem{file_, std::string(codes::kSurfacesInvalid), pointer, "", std::move(message)});
  }

  const std::string& file_;
  const TomlDocument& document_;
  const std::function<bool(std::string_view)>& plan_exists_;
  std::vector<LoadProblem>& problems_;
};

}  // namespace

SurfaceMap ReadSurfaces(std::string_view text, const std::string& file,
                        const std::function<bool(std::string_view)>& plan_exists,
                        std::vector<LoadProblem>& problems) {
  const std::size_t before = problems.size();
  const TomlDocument document = ReadToml(text, file, codes::kSurfacesInvalid, problems);
  if (problems.size() > before) return {};
  return SurfaceChecker(file, document, plan_exists, problems).Check();
}

}  // namespace rankd::engine
