// The shared corpus of invalid artifacts (tests/plans/invalid, docs/plan-format.md "Shared test
// corpus"): the engine passes a case when it rejects the artifact (checking the digest, as for an
// artifact loaded from disk) and one of the problems it reports has the case's code and pointer.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "json/canonical.h"
#include "json/parser.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"
#include "test_files.h"

namespace rankd::engine {
namespace {

TEST(PlanCorpusTest, EveryCaseIsRejectedWithItsCodeAtItsPointer) {
  std::map<std::string, std::shared_ptr<const Registry>> registries;
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::SourcePath("tests/plans/invalid"))) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 81u);
  std::string failures;
  std::size_t passed = 0;
  for (const std::filesystem::path& file : files) {
    const auto parsed = json::Parse(testing::ReadFile(file));
    ASSERT_TRUE(parsed.has_value()) << file << ": " << parsed.error().message;
    const json::Value& c = *parsed;
    const std::string& code = c.Find("code")->string();
    const std::string& pointer = c.Find("pointer")->string();
    const std::string registry_dir =
        c.Find("registry") != nullptr ? c.Find("registry")->string() : "registry";
    auto& registry = registries[registry_dir];
    if (registry == nullptr) registry = LoadRegistry(testing::SourcePath(registry_dir));
    const std::string name = file.filename().string();
    std::vector<LoadProblem> problems;
    try {
      LoadPlan(json::CanonicalJson(*c.Find("artifact")), name, *registry);
    } catch (const LoadError& e) {
      problems = e.problems();
    }
    const bool found = std::any_of(problems.begin(), problems.end(), [&](const LoadProblem& p) {
      return p.code == code && p.pointer == pointer && p.file == name;
    });
    if (found) {
      ++passed;
      continue;
    }
    failures += "\n" + name + ": expected " + code + " at \"" + pointer + "\", got:";
    for (const LoadProblem& p : problems)
      failures += "\n    " + p.code + " at \"" + p.pointer + "\": " + p.message;
    if (problems.empty()) failures += "\n    no problem";
  }
  std::printf("plan corpus: %zu of %zu cases pass\n", passed, files.size());
  EXPECT_EQ(failures, "");
}

}  // namespace
}  // namespace rankd::engine
