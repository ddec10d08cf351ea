// LoadPlanStore: a store written by rankc loads; index.json and surfaces.toml are checked; one
// bad file refuses the whole store, with every problem of every file.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "json/digest.h"
#include "plan_test_util.h"
#include "problems/problem_codes.h"
#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/store/plan_store.h"
#include "store/store_models.h"

namespace rankd::engine {
namespace {

using testing::CopyRegistry;
using testing::Describe;
using testing::FindProblem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// The bytes of the repository's model `name` (registry/models/<name>.txt).
std::string ModelText(std::string_view name) {
  return testing::ReadFile(testing::SourcePath("registry/models/" + std::string(name) + ".txt"));
}

// A store of the goldens in `dir`, as rankc build writes one, with the model they score.
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
  std::filesystem::create_directories(dir / "models");
  WriteFile(dir / "models/feed_ctr.txt", ModelText("feed_ctr"));
  json::Value::Object model;
  model.push_back({"name", json::Value::String("feed_ctr")});
  model.push_back({"path", json::Value::String("models/feed_ctr.txt")});
  model.push_back({"sha256", json::Value::String(json::Sha256Hex(ModelText("feed_ctr")))});
  json::Value::Array models;
  models.push_back(json::Value::MakeObject(std::move(model)));
  json::Value::Object index;
  index.push_back({"models", json::Value::MakeArray(std::move(models))});
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
  EXPECT_EQ(store->plans().size(), std::size(testing::kGoldenNames));
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

TEST(PlanStoreModelsTest, LoadsTheModelsTheIndexListsBoundToTheirKeys) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  const auto store = LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  ASSERT_EQ(store->models().size(), 1u);
  const BoundModel& model = *store->models().at("feed_ctr");
  EXPECT_EQ(model.sha256, json::Sha256Hex(ModelText("feed_ctr")));
  EXPECT_EQ(model.sha256, store->Find("feed_gbdt")->models.at("feed_ctr"));
  const Registry& registry = store->registry();
  EXPECT_EQ(model.feature_slots,
            (std::vector<std::size_t>{*registry.KeySlot("ctr"), *registry.KeySlot("likes"),
                                      *registry.KeySlot("age_hours")}));
  EXPECT_EQ(model.model.trees().size(), 40u);
}

TEST(PlanStoreModelsTest, TheIndexsModelEntriesAreChecked) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  json::Value index = ReadIndex(dir);
  json::Value entry = testing::At(index, "/models/0");
  testing::At(entry, "/name") = json::Value::String("nope");
  testing::At(index, "/models").array().push_back(entry);
  entry.object().push_back({"size", json::Value::Number(1, true)});
  testing::At(entry, "/name") = json::Value::String("zeta");
  testing::At(entry, "/path") = json::Value::String("../m.txt");
  testing::At(index, "/models").array().push_back(entry);
  WriteIndex(dir, index);
  const auto problems = StoreProblems(dir.path());
  for (const auto& [code, pointer] : std::vector<std::pair<std::string_view, std::string_view>>{
           {codes::kModelUnknown, "/models/1/name"},
           {codes::kIndexInvalid, "/models/2/size"},
           {codes::kIndexInvalid, "/models/2/path"}}) {
    EXPECT_NE(FindProblem(problems, code, pointer), nullptr)
        << code << " " << pointer << Describe(problems);
  }
}

// A model that splits on a feature as a number, where the registry declares the feature
// categorical: the problem says which way each side has it, and what to set to match the model.
TEST(PlanStoreModelsTest, ACategoricalMismatchSaysWhatToSetInTheRegistry) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  TempDir registry;
  CopyRegistry(registry.path());
  std::string text = ReadFile(registry / "models.toml");
  text.replace(text.find("{ name = \"likes\", key = \"likes\" }"), 33,
               "{ name = \"likes\", key = \"likes\", categorical = true }");
  WriteFile(registry / "models.toml", text);
  std::vector<LoadProblem> problems;
  try {
    LoadPlanStore(dir.path(), registry.path());
    ADD_FAILURE() << "the store loaded";
  } catch (const LoadError& e) {
    problems = e.problems();
  }
  const LoadProblem* invalid = FindProblem(problems, codes::kModelInvalid, "");
  ASSERT_NE(invalid, nullptr) << Describe(problems);
  EXPECT_NE(invalid->message.find("splits on feature \"likes\" as a number, but the registry "
                                  "declares it categorical: set categorical = false on feature "
                                  "\"likes\" of model \"feed_ctr\" in the registry"),
            std::string::npos)
      << invalid->message;
}

// A plan scoring a model the store refused as not the registry's gets no second problem saying
// to rebuild the store (rebuilding makes the same store: the fix is in the registry); a model
// the store lacks, or holds in another version, does get one.
TEST(PlanStoreModelsTest, APlanScoringAModelRefusedAsNotTheRegistrysGetsNoSecondProblem) {
  Plan plan;
  plan.name = "p";
  plan.models = {{"feed_ctr", std::string(64, 'a')}};
  const ModelSet none;
  ProblemSink refused("p.json");
  CheckPlanModels(plan, none, {"feed_ctr"}, refused);
  EXPECT_TRUE(refused.Take().empty());
  ProblemSink missing("p.json");
  CheckPlanModels(plan, none, {}, missing);
  const std::vector<LoadProblem> problems = missing.Take();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kModelDigestMismatch);
  EXPECT_NE(problems[0].message.find("which the store does not hold"), std::string::npos);
}

TEST(PlanStoreModelsTest, AModelFileMustBeTheIndexsAndTheRegistrysModel) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  // Another file than the index names: the index's problem, and the plan's model is not held.
  std::string text = ModelText("feed_ctr");
  text.replace(text.find("Tree=0"), 6, "Tree=0 ");
  WriteFile(dir / "models/feed_ctr.txt", text);
  auto problems = StoreProblems(dir.path());
  EXPECT_NE(FindProblem(problems, codes::kIndexMismatch, "/models/0/sha256"), nullptr)
      << Describe(problems);
  const LoadProblem* plan = FindProblem(problems, codes::kModelDigestMismatch, "/models/feed_ctr");
  ASSERT_NE(plan, nullptr) << Describe(problems);
  EXPECT_EQ(plan->file, (dir / "feed_gbdt.json").string());

  // The index names the file, but it is not a model, or not the registry's.
  const auto with_file = [&dir](const std::string& bytes) {
    WriteFile(dir / "models/feed_ctr.txt", bytes);
    json::Value index = ReadIndex(dir);
    testing::At(index, "/models/0/sha256") = json::Value::String(json::Sha256Hex(bytes));
    WriteIndex(dir, index);
    return StoreProblems(dir.path());
  };
  const std::string good = ModelText("feed_ctr");
  problems = with_file(good.substr(0, good.size() / 2));
  const LoadProblem* invalid = FindProblem(problems, codes::kModelInvalid, "");
  ASSERT_NE(invalid, nullptr) << Describe(problems);
  EXPECT_EQ(invalid->file, (dir / "models/feed_ctr.txt").string());
  EXPECT_NE(invalid->message.find("model \"feed_ctr\": line "), std::string::npos)
      << invalid->message;
  std::string renamed = good;
  renamed.replace(renamed.find("feature_names=ctr"), 17, "feature_names=CTR");
  problems = with_file(renamed);
  invalid = FindProblem(problems, codes::kModelInvalid, "");
  ASSERT_NE(invalid, nullptr) << Describe(problems);
  EXPECT_NE(invalid->message.find("the model's feature 0 is \"CTR\", but the registry's model "
                                  "\"feed_ctr\" names it \"ctr\""),
            std::string::npos)
      << invalid->message;
  // A valid model with another digest than the plan was built with.
  std::string retrained = good;
  const std::size_t leaf = retrained.find("leaf_value=") + 11;
  retrained.replace(leaf, retrained.find(' ', leaf) - leaf, "0.5");
  problems = with_file(retrained);
  EXPECT_EQ(FindProblem(problems, codes::kModelInvalid, ""), nullptr) << Describe(problems);
  plan = FindProblem(problems, codes::kModelDigestMismatch, "/models/feed_ctr");
  ASSERT_NE(plan, nullptr) << Describe(problems);
  EXPECT_NE(plan->message.find("was built with model \"feed_ctr\""), std::string::npos)
      << plan->message;
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
  EXPECT_EQ(store->plans().size(), std::size(testing::kGoldenNames));
  for (const char* name : testing::kGoldenNames) {
    ASSERT_NE(store->Find(name), nullptr) << name;
    EXPECT_EQ(store->Find(name)->text, testing::GoldenText(name))
        << name << ": the goldens are rankc's output";
  }
}

constexpr std::string_view kSurfaces = R"(
[surfaces.home]
salt = "home-2026-11"
[[surfaces.home.variants]]
name = "control"
plan = "feed"
weight = 90
[[surfaces.home.variants]]
name = "fresh"
plan = "reels"
weight = 10
[surfaces.home.shadow]
plan = "blend"
sample = 0.25
deadline_ms = 80

[surfaces.explore]
salt = "explore-1"
[[surfaces.explore.variants]]
name = "only"
plan = "blend"
weight = 3
)";

TEST(PlanStoreSurfacesTest, AStoreWithoutSurfacesTomlHasNoSurfaces) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  const auto store = LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  EXPECT_TRUE(store->surfaces().empty());
  EXPECT_EQ(store->FindSurface("home"), nullptr);
}

TEST(PlanStoreSurfacesTest, LoadsSurfacesWithTheirBucketRanges) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  WriteFile(dir / "surfaces.toml", std::string(kSurfaces));
  const auto store = LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  ASSERT_EQ(store->surfaces().size(), 2u);
  const std::shared_ptr<const Surface> home = store->FindSurface("home");
  ASSERT_NE(home, nullptr);
  EXPECT_EQ(home->name, "home");
  EXPECT_EQ(home->salt, "home-2026-11");
  ASSERT_EQ(home->variants.size(), 2u);
  EXPECT_EQ(home->variants[0].name, "control");
  EXPECT_EQ(home->variants[0].plan, "feed");
  EXPECT_EQ(home->variants[0].weight, 90);
  EXPECT_EQ(home->variants[0].bucket_begin, 0u);
  EXPECT_EQ(home->variants[0].bucket_end, 9000u);
  EXPECT_EQ(home->variants[1].name, "fresh");
  EXPECT_EQ(home->variants[1].plan, "reels");
  EXPECT_EQ(home->variants[1].bucket_begin, 9000u);
  EXPECT_EQ(home->variants[1].bucket_end, 10000u);
  ASSERT_TRUE(home->shadow.has_value());
  EXPECT_EQ(home->shadow->plan, "blend");
  EXPECT_EQ(home->shadow->sample, 0.25);
  EXPECT_EQ(home->shadow->deadline_ms, 80);
  const std::shared_ptr<const Surface> explore = store->FindSurface("explore");
  ASSERT_NE(explore, nullptr);
  EXPECT_FALSE(explore->shadow.has_value());
  ASSERT_EQ(explore->variants.size(), 1u);
  EXPECT_EQ(explore->variants[0].bucket_end, 10000u);
  EXPECT_EQ(store->FindSurface("nope"), nullptr);
}

// One variant's lines of a surfaces.toml: its table line for surface home, then its keys.
std::string Variant(std::string_view name, std::string_view plan, std::string_view weight,
                    std::string_view extra = "") {
  return "[[surfaces.home.variants]]\nname = \"" + std::string(name) + "\"\nplan = \"" +
         std::string(plan) + "\"\nweight = " + std::string(weight) + "\n" + std::string(extra);
}

// The shadow table of surface home, with `keys`.
std::string Shadow(std::string_view keys) { return "[surfaces.home.shadow]\n" + std::string(keys); }

// A surfaces.toml with one surface, home: `keys` under its table line, then `variants`.
std::string HomeSurface(std::string_view keys, std::initializer_list<std::string> variants) {
  std::string text = "[surfaces.home]\n" + std::string(keys);
  for (const std::string& v : variants) text += v;
  return text;
}

// Each rule of docs/experiments.md ("The file") has its problem, naming the file and key path.
TEST(PlanStoreSurfacesTest, EveryRuleOfTheFileIsChecked) {
  struct Case {
    std::string toml;
    std::string_view pointer;
    std::string_view message;  // a part of the message
  };
  const std::string salt = "salt = \"s\"\n";
  const Case cases[] = {
      {"[surfaces.Home]\n" + salt +
           "[[surfaces.Home.variants]]\nname = \"a\"\nplan = \"feed\"\nweight = 1\n",
       "/surfaces/Home", "is not a surface name"},
      {HomeSurface(salt, {Variant("a-b", "feed", "1")}), "/surfaces/home/variants/0/name",
       "is not a variant name"},
      {HomeSurface(salt, {Variant("a", "feed", "1"), Variant("a", "reels", "1")}),
       "/surfaces/home/variants/1/name", "named twice"},
      {HomeSurface(salt, {Variant("a", "nope", "1")}), "/surfaces/home/variants/0/plan",
       "no plan \"nope\""},
      {HomeSurface(salt, {Variant("a", "feed", "0")}), "/surfaces/home/variants/0/weight",
       "weight must be an integer from 1"},
      {HomeSurface(salt, {Variant("a", "feed", "2.5")}), "/surfaces/home/variants/0/weight",
       "weight must be an integer from 1"},
      {HomeSurface(salt + "variants = []\n", {}), "/surfaces/home/variants", "non-empty array"},
      {HomeSurface("salt = \"\"\n", {Variant("a", "feed", "1")}), "/surfaces/home/salt",
       "salt must be a non-empty string"},
      {HomeSurface("", {Variant("a", "feed", "1")}), "/surfaces/home", "missing key \"salt\""},
      {HomeSurface(salt + "shadow = \"reels\"\n", {Variant("a", "feed", "1")}),
       "/surfaces/home/shadow", "shadow must be a table with plan and sample"},
      {HomeSurface(salt, {Variant("a", "feed", "1"), Shadow("plan = \"nope\"\nsample = 1\n")}),
       "/surfaces/home/shadow/plan", "no plan \"nope\""},
      {HomeSurface(salt, {Variant("a", "feed", "1"), Shadow("plan = \"reels\"\nsample = 0\n")}),
       "/surfaces/home/shadow/sample", "sample must be a number over 0 and at most 1"},
      {HomeSurface(salt, {Variant("a", "feed", "1"), Shadow("plan = \"reels\"\nsample = 1.5\n")}),
       "/surfaces/home/shadow/sample", "sample must be a number over 0 and at most 1"},
      {HomeSurface(salt, {Variant("a", "feed", "1"), Shadow("plan = \"reels\"\n")}),
       "/surfaces/home/shadow", "missing key \"sample\""},
      {HomeSurface(salt, {Variant("a", "feed", "1"),
                          Shadow("plan = \"reels\"\nsample = 1\ndeadline_ms = 0\n")}),
       "/surfaces/home/shadow/deadline_ms", "deadline_ms must be an integer from 1 to 60000"},
      {HomeSurface(
           salt, {Variant("a", "feed", "1"), Shadow("plan = \"reels\"\nsample = 1\nweight = 2\n")}),
       "/surfaces/home/shadow/weight", "unknown key \"weight\""},
      {HomeSurface(salt, {Variant("a", "feed", "1", "share = 3\n")}),
       "/surfaces/home/variants/0/share", "unknown key \"share\""},
      {"[experiments]\n", "/experiments", "unknown key \"experiments\""},
      {"[surfaces.home\nsalt = 1\n", "", "invalid TOML at line 1"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteGoldenStore(dir.path());
    WriteFile(dir / "surfaces.toml", c.toml);
    const auto problems = StoreProblems(dir.path());
    const LoadProblem* problem = FindProblem(problems, codes::kSurfacesInvalid, c.pointer);
    ASSERT_NE(problem, nullptr) << c.toml << Describe(problems);
    EXPECT_EQ(problem->file, (dir / "surfaces.toml").string());
    EXPECT_NE(problem->message.find(c.message), std::string::npos) << problem->message;
    EXPECT_EQ(problems.size(), 1u) << c.toml << Describe(problems);
  }
}

TEST(PlanStoreSurfacesTest, ABadSurfacesFileRefusesTheWholeStoreWithTheOtherFilesProblems) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  std::filesystem::remove(dir / "timeouts.json");
  WriteFile(dir / "surfaces.toml", HomeSurface("salt = \"s\"\n", {Variant("a", "feed", "-1")}));
  const auto problems = StoreProblems(dir.path());
  const LoadProblem* weight =
      FindProblem(problems, codes::kSurfacesInvalid, "/surfaces/home/variants/0/weight");
  ASSERT_NE(weight, nullptr) << Describe(problems);
  EXPECT_NE(weight->message.find("(line 6)"), std::string::npos) << weight->message;
  EXPECT_NE(FindProblem(problems, codes::kFileUnreadable, ""), nullptr) << Describe(problems);
  EXPECT_EQ(problems.size(), 2u) << Describe(problems);
}

// A store loaded again from the same files (a restart, a reload) assigns every viewer the same.
TEST(PlanStoreSurfacesTest, AStoreLoadedAgainAssignsEveryViewerTheSame) {
  TempDir dir;
  WriteGoldenStore(dir.path());
  WriteFile(dir / "surfaces.toml", std::string(kSurfaces));
  const auto first = LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  const auto second = LoadPlanStore(dir.path(), testing::SourcePath("registry"));
  const Surface& a = *first->FindSurface("home");
  const Surface& b = *second->FindSurface("home");
  ASSERT_NE(&a, &b);
  std::size_t fresh = 0;
  for (std::int64_t viewer = 1; viewer <= 100000; ++viewer) {
    ASSERT_EQ(a.Assign(viewer).name, b.Assign(viewer).name) << viewer;
    fresh += a.Assign(viewer).name == "fresh" ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(fresh) / 100000, 0.1, 0.005);
}

}  // namespace
}  // namespace rankd::engine
