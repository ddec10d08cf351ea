// Differential test: the engine and rankc reach the same verdicts on hundreds of artifacts made by
// mutating the goldens (a number, string, member or element changed, added, removed or grafted
// from elsewhere in the plan), most with their digest recomputed so the mutation itself is what is
// checked. Where rankc reports no schema problem, both report the same set of (code, pointer);
// where it does, both report schema problems with a pointer in common (rankc's Ajv stops at the
// first violation, the engine lists them all). Needs rankc built; skipped otherwise.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plan_test_util.h"
#include "problems/problem_codes.h"

namespace rankd::engine {
namespace {

using Problems = std::set<std::pair<std::string, std::string>>;

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  void Mutate(json::Value& plan) {
    std::vector<json::Value*> values;
    Collect(plan, values);
    json::Value& target = *values[Pick(values.size())];
    switch (Pick(8)) {
      case 0:
      case 1:
        target = Scalar(target);
        break;
      case 2:
        if (target.is_object()) EraseOne(target.object());
        break;
      case 3:
        if (target.is_object()) {
          std::string name = Word();
          // A repeated name is a JSON error the engine refuses before any rule (rankc's JSON.parse
          // keeps the last member): not a rule to compare.
          if (target.Find(name) == nullptr)
            target.object().push_back({std::move(name), Scalar(json::Value())});
        }
        break;
      case 4:
        if (target.is_array()) EraseOne(target.array());
        break;
      case 5:
        if (target.is_array() && !target.array().empty()) {
          target.array().push_back(target.array()[Pick(target.array().size())]);
        }
        break;
      default: {  // graft another part of the plan here
        const json::Value graft = *values[Pick(values.size())];
        target = graft;
        break;
      }
    }
  }

  std::size_t Pick(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }

 private:
  template <typename Items>
  void EraseOne(Items& items) {
    if (!items.empty()) items.erase(items.begin() + static_cast<long>(Pick(items.size())));
  }

  static void Collect(json::Value& v, std::vector<json::Value*>& out) {
    out.push_back(&v);
    if (v.is_array()) {
      for (json::Value& e : v.array()) Collect(e, out);
    } else if (v.is_object()) {
      for (json::Member& m : v.object()) Collect(m.value, out);
    }
  }

  std::string Word() {
    static const char* kWords[] = {"",
                                   "id",
                                   "likes",
                                   "ctr",
                                   "title",
                                   "country",
                                   "verified",
                                   "final_score",
                                   "model_score_1",
                                   "author_id",
                                   "age_hours",
                                   "user",
                                   "follow",
                                   "media",
                                   "media_features",
                                   "recommendation",
                                   "constructor",
                                   "__proto__",
                                   "e0",
                                   "e1",
                                   "p0",
                                   "p1",
                                   "viewer",
                                   "features",
                                   "score",
                                   "quality",
                                   "op",
                                   "args",
                                   "arg",
                                   "key",
                                   "name",
                                   "type",
                                   "value",
                                   "values",
                                   "pattern",
                                   "param",
                                   "flags",
                                   "(?=x)",
                                   "a{1001}",
                                   "[",
                                   "\\d+",
                                   "ims",
                                   "is",
                                   "float",
                                   "int",
                                   "string",
                                   "bool",
                                   "asc",
                                   "desc",
                                   "skip",
                                   "like_weight",
                                   "blocklist_regex",
                                   "result_size",
                                   "min_score",
                                   "shoe_size",
                                   "neg",
                                   "add",
                                   "coalesce",
                                   "if",
                                   "eq",
                                   "lt",
                                   "in",
                                   "regex",
                                   "not",
                                   "and",
                                   "is_null",
                                   "const",
                                   "null",
                                   "take",
                                   "topk",
                                   "sort",
                                   "dedupe",
                                   "concat",
                                   "vm",
                                   "filter",
                                   "fetch_features",
                                   "fetch_list",
                                   "exclude_seen",
                                   "insert",
                                   "diversify",
                                   "seen",
                                   "every",
                                   "max_inserted",
                                   "max_per_window",
                                   "window"};
    return kWords[Pick(std::size(kWords))];
  }

  json::Value Scalar(const json::Value& like) {
    static const double kNumbers[] = {0,
                                      -1,
                                      1,
                                      1.5,
                                      2,
                                      64,
                                      1000,
                                      10001,
                                      1e7,
                                      1e7 + 1,
                                      9007199254740992.0,
                                      -9007199254740992.0,
                                      1e300,
                                      0.5,
                                      100.5,
                                      -1001};
    const std::size_t kind = like.is_number() ? 0 : like.is_string() ? 1 : Pick(4);
    switch (kind) {
      case 0:
        return json::Value::Number(kNumbers[Pick(std::size(kNumbers))], true);
      case 1:
        return json::Value::String(Word());
      case 2:
        return json::Value::Bool(Pick(2) == 0);
      default:
        return json::Value();
    }
  }

  std::mt19937_64 rng_;
};

Problems EngineProblems(const std::string& text, const Registry& registry) {
  Problems problems;
  try {
    LoadPlan(text, "mutant.json", registry);
  } catch (const LoadError& e) {
    for (const LoadProblem& p : e.problems()) problems.emplace(p.code, p.pointer);
  }
  return problems;
}

std::string Show(const Problems& problems) {
  std::string text;
  for (const auto& [code, pointer] : problems) text += " " + code + "@\"" + pointer + "\"";
  return text.empty() ? " (none)" : text;
}

TEST(RankcAgreementTest, MutatedGoldensGetTheSameVerdicts) {
  if (!testing::RankcAvailable())
    GTEST_SKIP() << "rankc is not built (npm ci at the repository root)";
  // RANKD_AGREEMENT_MUTANTS and RANKD_AGREEMENT_SEED explore further than the default run.
  const char* count = std::getenv("RANKD_AGREEMENT_MUTANTS");
  const char* seed = std::getenv("RANKD_AGREEMENT_SEED");
  const int kMutants = count != nullptr ? std::atoi(count) : 600;
  const auto registry = LoadRegistry(testing::SourcePath("registry"));
  testing::TempDir dir;
  Mutator mutator(seed != nullptr ? std::strtoull(seed, nullptr, 10) : 42);
  std::vector<std::string> texts;
  for (int i = 0; i < kMutants; ++i) {
    json::Value plan =
        testing::GoldenJson(testing::kGoldenNames[i % std::size(testing::kGoldenNames)]);
    for (std::size_t n = 1 + mutator.Pick(2); n > 0; --n) mutator.Mutate(plan);
    if (!plan.is_object()) plan = json::Value::MakeObject({});
    if (mutator.Pick(10) != 0 && plan.Find("digest") != nullptr) {
      testing::At(plan, "/digest") = json::Value::String(PlanDigest(plan));
    }
    texts.push_back(json::CanonicalJson(plan));
    const std::string file = (dir / ("mutant" + std::to_string(i) + ".json")).string();
    testing::WriteFile(file, texts.back());
  }
  const testing::CommandResult rankc = testing::RunCommand(
      "node '" + testing::SourcePath("tests/engine/rankc_problems.mjs").string() + "' '" +
      testing::SourcePath("").string() + "' '" + testing::SourcePath("registry").string() + "' '" +
      dir.path().string() + "'");
  ASSERT_EQ(rankc.status, 0) << rankc.output;
  std::map<std::string, Problems> expected;
  std::size_t start = 0;
  while (start < rankc.output.size()) {
    const std::size_t end = rankc.output.find('\n', start);
    const auto line = json::Parse(std::string_view(rankc.output).substr(start, end - start));
    ASSERT_TRUE(line.has_value());
    Problems& problems = expected[line->Find("file")->string()];
    for (const json::Value& p : line->Find("problems")->array()) {
      problems.emplace(p.array()[0].string(), p.array()[1].string());
    }
    start = end + 1;
  }
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kMutants));
  int disagreements = 0;
  int rejected = 0;
  std::string report;
  for (int i = 0; i < kMutants; ++i) {
    const std::string file = (dir / ("mutant" + std::to_string(i) + ".json")).string();
    const Problems& want = expected[file];
    const Problems got = EngineProblems(texts[i], *registry);
    bool agree = false;
    if (want.empty() || !want.begin()->first.starts_with("schema")) {
      agree = want == got;
    } else {
      bool only_schema = !got.empty();
      bool common = false;
      for (const auto& p : got) {
        only_schema = only_schema && p.first == codes::kSchema;
        common = common || want.count(p) != 0;
      }
      agree = only_schema && common;
    }
    rejected += want.empty() ? 0 : 1;
    if (agree) continue;
    ++disagreements;
    if (disagreements <= 10) {
      report += "\nmutant " + std::to_string(i) + ":\n  rankc: " + Show(want) +
                "\n  engine:" + Show(got) + "\n  " + texts[i].substr(0, 3000);
    }
  }
  std::printf("rankc agreement: %d mutants, %d rejected by rankc, %d disagreements\n", kMutants,
              rejected, disagreements);
  EXPECT_EQ(disagreements, 0) << report;
}

}  // namespace
}  // namespace rankd::engine
