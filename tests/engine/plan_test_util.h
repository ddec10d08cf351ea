// Golden artifacts as text and as JSON values, and edits that keep (or break) the digest.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "json/canonical.h"
#include "json/parser.h"
#include "json/pointer.h"
#include "plan/plan_checker.h"
#include "rankd/engine/store/plan_store.h"
#include "test_files.h"

namespace rankd::engine::testing {

inline constexpr const char* kGoldenNames[] = {"blend",      "feed",  "feed_fresh", "feed_gbdt",
                                               "feed_rules", "reels", "timeouts"};

inline std::filesystem::path GoldenPath(const std::string& name) {
  return SourcePath("dsl/test/golden/" + name + ".json");
}

inline std::string GoldenText(const std::string& name) { return ReadFile(GoldenPath(name)); }

inline json::Value GoldenJson(const std::string& name) { return *json::Parse(GoldenText(name)); }

// The value at `pointer` in `root`, to be edited.
inline json::Value& At(json::Value& root, std::string_view pointer) {
  const json::Value* at = json::ResolvePointer(root, pointer);
  if (at == nullptr) throw std::runtime_error("no value at " + std::string(pointer));
  return const_cast<json::Value&>(*at);
}

// The artifact's text with its digest recomputed (so only the edit is at fault).
inline std::string WithDigest(json::Value artifact) {
  At(artifact, "/digest") = json::Value::String(PlanDigest(artifact));
  return json::CanonicalJson(artifact);
}

// The problems LoadPlan reports for `text`; none (and a test failure) when it loads.
inline std::vector<LoadProblem> LoadProblems(std::string_view text, const Registry& registry,
                                             const std::string& file = "plan.json") {
  try {
    LoadPlan(text, file, registry);
  } catch (const LoadError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "the plan loaded";
  return {};
}

// The first problem with `code` at `pointer`, or null.
inline const LoadProblem* FindProblem(const std::vector<LoadProblem>& problems,
                                      std::string_view code, std::string_view pointer) {
  for (const LoadProblem& p : problems) {
    if (p.code == code && p.pointer == pointer) return &p;
  }
  return nullptr;
}

inline std::string Describe(const std::vector<LoadProblem>& problems) {
  std::string text;
  for (const LoadProblem& p : problems) text += "\n  " + p.ToString();
  return text;
}

}  // namespace rankd::engine::testing
