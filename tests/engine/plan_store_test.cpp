// LoadPlanStore: a store written by rankc loads; index.json is checked; one bad file refuses the
// whole store, with every problem of every file.
#include <gtest/gtest.h>

#include <string>

#include "plan/problem_codes.h"
#include "plan_test_util.h"
#include "rankd/engine/store/plan_store.h"

namespace rankd::engine {
namespace {

using testing::Describe;
using testing::FindProblem;
using testing::TempDir;
using testing::WriteFile;

// A store of the four goldens in `dir`, as rankc build writes one.
void WriteGoldenStore(const std::filesystem::path& dir) {
  json::Value::Array plans;
  for (const char* name : testing::kGoldenNames) {
    const std::string text = testing::GoldenText(name);
    WriteFile(dir / (std::string(name) + ".json"), text);
    json::Value::Object entry;
    entry.push_back({"digest", *json::ResolvePointer(*json::Parse(text), "/digest")});
    entry.push_back({"name", json::Value::String(name)});
    entry.push_back({"path", json::Value::String(std::string(name) + ".json")});
    plans.push_back(json::Value::MakeObject(std::move(entry)));
  }
  json::Value::Object index;
  index.push_back({"plans", json::Value::MakeArray(std::move(plans))});
  index.push_back({"registry_digest", json::Value::String(testing::GoldenRegistryDigest())});
  index.push_back({"schema_version", json::Value::Number(1, true)});
  WriteFile(dir / "index.json", json::CanonicalJson(json::Value::MakeObject(std::move(index))));
}

json::Value ReadIndex(const TempDir& dir) {
  return *json::Parse(testing::ReadFile(dir / "index.json"));
}
void WriteIndex(const TempDir& dir, const json::Value& index) {
  WriteFile(dir / "index.json", json::CanonicalJson(index));
}

std::vector<LoadProblem> StoreProblems(const std::filesystem::path& dir) {
  try {
    LoadPlanStore(dir, testing::SourcePath("registry"));
  } catch (const LoadError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "the store loaded";
  return {};
}

TEST(PlanStoreTest, LoadsAStoreOfTheExamplePlans) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  const auto before = std::chrono::system_clock::now();
  const std::shared_ptr<const PlanStore> store =
      LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  EXPECT_EQ(store->plans().size(), 4u);
  EXPECT_EQ(store->registry().digest(), testing::GoldenRegistryDigest());
  ASSERT_NE(store->Find("feed"), nullptr);
  EXPECT_EQ(store->Find("feed")->file, (dir / "feed.json").string());
  EXPECT_EQ(store->Find("nope"), nullptr);
  EXPECT_GE(store->loaded_at(), before);
  EXPECT_EQ(store->registry_ptr().get(), &store->registry());
}

TEST(PlanStoreTest, OneBadPlanRefusesTheWholeStore) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  std::string reels = testing::ReadFile(dir / "reels.json");
  reels.replace(reels.find("\"on_error\": \"fail\""), 18, "\"on_error\": \"retry\"");
  WriteFile(dir / "reels.json", reels);
  std::filesystem::remove(dir / "timeouts.json");
  const auto problems = StoreProblems(dir.path());
  const LoadProblem* schema = FindProblem(problems, codes::kSchema, "/nodes/0/on_error");
  ASSERT_NE(schema, nullptr) << Describe(problems);
  EXPECT_EQ(schema->file, (dir / "reels.json").string());
  const LoadProblem* missing = FindProblem(problems, codes::kFileUnreadable, "");
  ASSERT_NE(missing, nullptr) << Describe(problems);
  EXPECT_EQ(missing->file, (dir / "timeouts.json").string());
  EXPECT_EQ(problems.size(), 2u) << Describe(problems);
}

TEST(PlanStoreTest, TheIndexMustMatchTheArtifacts) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  json::Value index = ReadIndex(dir);
  testing::At(index, "/plans/1/digest") = testing::At(index, "/plans/0/digest");
  testing::At(index, "/plans/2/path") = json::Value::String("timeouts.json");
  WriteIndex(dir, index);
  const auto problems = StoreProblems(dir.path());
  EXPECT_NE(FindProblem(problems, codes::kIndexMismatch, "/plans/1/digest"), nullptr)
      << Describe(problems);
  const LoadProblem* name = FindProblem(problems, codes::kIndexMismatch, "/plans/2/name");
  ASSERT_NE(name, nullptr) << Describe(problems);
  EXPECT_EQ(name->file, (dir / "index.json").string());
  EXPECT_NE(name->message.find("timeouts.json is plan \"timeouts\""), std::string::npos)
      << name->message;
}

TEST(PlanStoreTest, TheIndexIsChecked) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  json::Value index = ReadIndex(dir);
  testing::At(index, "/schema_version") = json::Value::Number(2, true);
  testing::At(index, "/registry_digest") = json::Value::String(std::string(64, 'a'));
  std::swap(testing::At(index, "/plans/0"), testing::At(index, "/plans/1"));
  testing::At(index, "/plans/2/path") = json::Value::String("../reels.json");
  testing::At(index, "/plans/3").object().push_back({"size", json::Value::Number(1, true)});
  index.object().push_back({"extra", json::Value()});
  WriteIndex(dir, index);
  const auto problems = StoreProblems(dir.path());
  for (const auto& [code, pointer] : std::vector<std::pair<std::string_view, std::string_view>>{
           {codes::kIndexInvalid, "/schema_version"},
           {codes::kRegistryDigestMismatch, "/registry_digest"},
           {codes::kIndexInvalid, "/plans/1/name"},  // blend after feed: not sorted
           {codes::kIndexInvalid, "/plans/2/path"},
           {codes::kIndexInvalid, "/plans/3/size"},
           {codes::kIndexInvalid, "/extra"}}) {
    EXPECT_NE(FindProblem(problems, code, pointer), nullptr)
        << code << " " << pointer << Describe(problems);
  }
}

TEST(PlanStoreTest, AMissingOrBrokenIndex) {
  TempDir dir;
  auto problems = StoreProblems(dir.path());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kFileUnreadable);
  EXPECT_EQ(problems[0].file, (dir / "index.json").string());
  WriteFile(dir / "index.json", "{\"plans\": [}");
  problems = StoreProblems(dir.path());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kJsonSyntax);
  EXPECT_EQ(problems[0].pointer, "/plans/0");
}

TEST(PlanStoreTest, ABadRegistryRefusesTheStore) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  EXPECT_THROW(LoadPlanStore(dir.path(), dir / "no_registry_here"), LoadError);
}

// The store `rankc build` writes from plans/*.plan.ts loads as it is.
TEST(PlanStoreTest, LoadsWhatRankcBuildWrites) {
  if (!testing::RankcAvailable())
    GTEST_SKIP() << "rankc is not built (npm ci at the repository root)";
  TempDir dir;
  const testing::CommandResult rankc =
      testing::RunRankc("build plans --out '" + (dir / "store").string() + "' 2>&1");
  ASSERT_EQ(rankc.status, 0) << rankc.output;
  const auto store = LoadPlanStore(dir / "store", testing::SourcePath("registry"));
  EXPECT_EQ(store->plans().size(), 4u);
  for (const char* name : testing::kGoldenNames) {
    ASSERT_NE(store->Find(name), nullptr) << name;
    EXPECT_EQ(store->Find(name)->text, testing::GoldenText(name))
        << name << ": the goldens are rankc's output";
  }
}

}  // namespace
}  // namespace rankd::engine
