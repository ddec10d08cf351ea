// LoadRegistry: registry/ loads with the digest rankc computes, and each kind of bad registry is
// refused with problems naming the file and the field.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "problems/problem_codes.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"
#include "test_files.h"

namespace rankd::engine {
namespace {

using testing::CopyRegistry;
using testing::ReadFile;
using testing::SourcePath;
using testing::TempDir;
using testing::WriteFile;

TEST(RegistryTest, LoadsTheRepositoryRegistryWithTheGoldenArtifactsDigest) {
  const auto registry = LoadRegistry(SourcePath("registry"));
  EXPECT_EQ(registry->digest(), testing::GoldenRegistryDigest());
  ASSERT_EQ(registry->keys().size(), 11u);
  EXPECT_EQ(registry->id_slot(), 0u);
  EXPECT_EQ(registry->KeySlot("ctr"), 6u);
  EXPECT_EQ(registry->FindKey("final_score")->type, ValueType::kFloat);
  EXPECT_TRUE(registry->FindKey("final_score")->writable);
  EXPECT_EQ(registry->FindKey("nope"), nullptr);
  const ParamDef* result_size = registry->FindParam("result_size");
  ASSERT_NE(result_size, nullptr);
  EXPECT_EQ(result_size->type, ValueType::kInt);
  EXPECT_EQ(std::get<std::int64_t>(result_size->default_value), 50);
  EXPECT_EQ(result_size->min, 1.0);
  EXPECT_EQ(result_size->max, 1000.0);
  EXPECT_FALSE(registry->FindParam("blocklist_regex")->min.has_value());
  ASSERT_EQ(registry->endpoints().size(), 2u);
  EXPECT_EQ(registry->endpoints()[0].name, "features");
  const EndpointDef* graph = registry->FindEndpoint("graph");
  EXPECT_EQ(graph->dev.address, "127.0.0.1:6379");
  EXPECT_EQ(graph->prod.mode, EndpointTarget::Mode::kCluster);
  EXPECT_EQ(graph->prod.seeds.size(), 3u);
  EXPECT_EQ(graph->prod.pool_size, 8);
  EXPECT_FALSE(graph->prod.read_from_replicas) << "replica reads are off unless asked for";
  const KeySchema* media = registry->FindKeySchema("media_features");
  ASSERT_NE(media, nullptr);
  EXPECT_EQ(media->type, KeySchema::Type::kHash);
  EXPECT_EQ(media->KeyFor(42), "media_features:42");
  EXPECT_EQ(media->yields.size(), 5u);
  for (const KeySchema& schema : registry->key_schemas()) {
    EXPECT_FALSE(schema.cache.has_value()) << schema.name << ": the cache is off by default";
  }
}

// The "user" key schema of registry/key_schemas.toml, to which a test adds a `cache` line.
constexpr const char* kUserSchema = "name = \"user\"\n";

// A copy of registry/ in `dir` with caches on the "user" and "media_features" key schemas.
void CopyRegistryWithCaches(const std::filesystem::path& dir) {
  CopyRegistry(dir);
  std::string text = ReadFile(dir / "key_schemas.toml");
  for (const auto& [schema, cache] :
       {std::pair<std::string, std::string>{kUserSchema,
                                            "cache = { ttl_ms = 60000, max_mb = 256 }"},
        {"name = \"media_features\"\n",
         "cache = { max_mb = 65536, ttl_ms = 86400000, keys_expire = false }"}}) {
    const std::size_t at = text.find(schema);
    ASSERT_NE(at, std::string::npos) << schema;
    text.insert(at + schema.size(), cache + "\n");
  }
  WriteFile(dir / "key_schemas.toml", text);
}

TEST(RegistryTest, DigestEqualsRankcRegistryDigest) {
  if (!testing::RankcAvailable())
    GTEST_SKIP() << "rankc is not built (npm ci at the repository root)";
  TempDir cached;
  CopyRegistryWithCaches(cached.path());
  for (const std::string& dir :
       {SourcePath("registry").string(),
        SourcePath("tests/plans/registries/no_media_schema").string(),
        SourcePath("tests/plans/registries/constructor_param").string(), cached.path().string()}) {
    const testing::CommandResult rankc = testing::RunRankc("registry-digest --registry " + dir);
    ASSERT_EQ(rankc.status, 0) << dir;
    EXPECT_EQ(LoadRegistry(dir)->digest() + "\n", rankc.output) << dir;
  }
}

// A key schema's cache changes how fresh data may be, not what a plan means: it is read into the
// schema and left out of the digest, so plans compiled without it still load.
TEST(RegistryTest, KeySchemaCacheIsReadAndNotPartOfTheDigest) {
  TempDir dir;
  CopyRegistryWithCaches(dir.path());
  const auto registry = LoadRegistry(dir.path());
  EXPECT_EQ(registry->digest(), testing::GoldenRegistryDigest());
  const KeySchema* user = registry->FindKeySchema("user");
  ASSERT_TRUE(user->cache.has_value());
  EXPECT_EQ(user->cache->ttl_ms, 60000);
  EXPECT_EQ(user->cache->max_mb, 256);
  EXPECT_TRUE(user->cache->keys_expire);  // absent: true
  const KeySchema* media = registry->FindKeySchema("media_features");
  ASSERT_TRUE(media->cache.has_value());
  EXPECT_EQ(media->cache->ttl_ms, kMaxCacheTtlMs);
  EXPECT_EQ(media->cache->max_mb, kMaxCacheMb);
  EXPECT_FALSE(media->cache->keys_expire);
  EXPECT_FALSE(registry->FindKeySchema("follow")->cache.has_value());
  // Any other edit of the same schema does change the digest.
  std::string text = ReadFile(dir / "key_schemas.toml");
  text.replace(text.find("A user's profile."), 17, "A profile.");
  WriteFile(dir / "key_schemas.toml", text);
  EXPECT_NE(LoadRegistry(dir.path())->digest(), testing::GoldenRegistryDigest());
}

TEST(RegistryTest, AClusterEndpointMayReadFromReplicas) {
  TempDir dir;
  CopyRegistry(dir.path());
  std::string endpoints = ReadFile(dir / "endpoints.toml");
  endpoints.replace(endpoints.find("pool_size = 8"), 13,
                    "pool_size = 8\nread_from_replicas = true");
  WriteFile(dir / "endpoints.toml", endpoints);
  const auto registry = LoadRegistry(dir.path());
  EXPECT_TRUE(registry->FindEndpoint("graph")->prod.read_from_replicas);
  EXPECT_FALSE(registry->FindEndpoint("features")->prod.read_from_replicas);
  // Where reads go is part of the endpoint, which the digest covers as rankc's does.
  EXPECT_NE(registry->digest(), testing::GoldenRegistryDigest());
}

// Numbers are JavaScript's: a TOML float with an integral value is an integer, as rankc reads it.
TEST(RegistryTest, TomlFloatsAndIntegersAreOneNumberType) {
  TempDir dir;
  CopyRegistry(dir.path());
  std::string endpoints = ReadFile(dir / "endpoints.toml");
  endpoints.replace(endpoints.find("pool_size = 2"), 13, "pool_size = 2.0");
  WriteFile(dir / "endpoints.toml", endpoints);
  EXPECT_EQ(LoadRegistry(dir.path())->digest(), testing::GoldenRegistryDigest());
}

std::vector<LoadProblem> ProblemsOf(const std::filesystem::path& dir) {
  try {
    LoadRegistry(dir);
  } catch (const LoadError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "the registry loaded";
  return {};
}

// Loads a copy of registry/ with `file` edited: `from` replaced by `to`.
std::vector<LoadProblem> ProblemsWithEdit(const std::string& file, const std::string& from,
                                          const std::string& to) {
  TempDir dir;
  CopyRegistry(dir.path());
  std::string text = ReadFile(dir / file);
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  WriteFile(dir / file, text);
  std::vector<LoadProblem> problems = ProblemsOf(dir.path());
  for (LoadProblem& p : problems) p.file = std::filesystem::path(p.file).filename().string();
  return problems;
}

::testing::AssertionResult Has(const std::vector<LoadProblem>& problems, const std::string& file,
                               const std::string& pointer, const std::string& text) {
  std::string all;
  for (const LoadProblem& p : problems) {
    if (p.code == codes::kRegistryInvalid && p.file == file && p.pointer == pointer &&
        p.message.find(text) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
    all += "\n  " + p.ToString();
  }
  return ::testing::AssertionFailure() << "no problem in " << file << " at " << pointer
                                       << " saying \"" << text << "\"; got:" << all;
}

TEST(RegistryTest, UnknownFieldNamesFileFieldAndLine) {
  const auto problems =
      ProblemsWithEdit("keys.toml", "name = \"ctr\"", "name = \"ctr\"\ncolour = \"red\"");
  EXPECT_TRUE(
      Has(problems, "keys.toml", "/keys/6/colour", "key \"ctr\": unknown field \"colour\""));
  EXPECT_NE(problems[0].message.find("(line 5"), std::string::npos) << problems[0].message;
}

TEST(RegistryTest, MissingFieldPointsAtTheTable) {
  EXPECT_TRUE(Has(ProblemsWithEdit("keys.toml", "nullable = true\nwritable = false\ndoc = \"ISO",
                                   "writable = false\ndoc = \"ISO"),
                  "keys.toml", "/keys/1", "missing field \"nullable\""));
}

TEST(RegistryTest, EachTableInExactlyOneFile) {
  EXPECT_TRUE(
      Has(ProblemsWithEdit("params.toml", "[[params]]\nname = \"recency_weight\"",
                           "[[keys]]\nid = 99\nname = \"x\"\ntype = \"int\"\nnullable = true\n"
                           "writable = false\ndoc = \"\"\n\n[[params]]\nname = \"recency_weight\""),
          "params.toml", "/keys", "also defined in"));
  EXPECT_TRUE(Has(ProblemsWithEdit("params.toml", "[[params]]\nname = \"recency_weight\"",
                                   "[colours]\nred = 1\n\n[[params]]\nname = \"recency_weight\""),
                  "params.toml", "/colours", "unknown registry table \"colours\""));
  TempDir dir;
  CopyRegistry(dir.path());
  std::filesystem::remove(dir / "params.toml");
  const auto problems = ProblemsOf(dir.path());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("the registry has no \"params\" table"), std::string::npos);
}

TEST(RegistryTest, TomlSyntaxErrorsNameTheLine) {
  const auto problems = ProblemsWithEdit("keys.toml", "id = 3", "id = = 3");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].file, "keys.toml");
  EXPECT_NE(problems[0].message.find("invalid TOML at line 25"), std::string::npos)
      << problems[0].message;
}

// One edit of a copy of registry/ and the problem it must cause.
struct Edit {
  const char* file;
  const char* from;
  const char* to;
  const char* pointer;
  const char* says;
};

void ExpectProblems(std::initializer_list<Edit> edits) {
  for (const Edit& e : edits) {
    EXPECT_TRUE(Has(ProblemsWithEdit(e.file, e.from, e.to), e.file, e.pointer, e.says))
        << e.from << " -> " << e.to;
  }
}

TEST(RegistryTest, RefusesWhatJsonCannotHold) {
  ExpectProblems({
      {"params.toml", "default = 0.1", "default = 1979-05-27", "/params/0/default",
       "dates and times"},
      {"params.toml", "default = 0.1", "default = nan", "/params/0/default", "finite"},
      {"keys.toml", "id = 3", "id = 9007199254740993", "/keys/2/id", "not a safe integer"},
  });
}

TEST(RegistryTest, ChecksEveryRule) {
  ExpectProblems({
      {"keys.toml", "name = \"id\"", "name = \"ident\"", "/keys", "must define the key \"id\""},
      {"keys.toml", "id = 3", "id = 2", "/keys/2/id", "id 2 is used by another key"},
      {"keys.toml", "name = \"title\"", "name = \"Title\"", "/keys/7/name",
       "name must be lower_snake_case, got \"Title\""},
      {"keys.toml", "type = \"bool\"", "type = \"boolean\"", "/keys/2/type",
       "type must be one of int, float, string, bool"},
      {"params.toml", "default = 50", "default = 5000", "/params/4/default",
       "default 5000 is outside [1, 1000]"},
      {"params.toml", "default = 50", "default = 50.5", "/params/4/default",
       "must be an integer, got 50.5"},
      {"params.toml", "doc = \"Titles", "min = 1\ndoc = \"Titles", "/params/5/min",
       "unknown field \"min\""},
      {"params.toml", "max_bytes = 256", "max_bytes = 0", "/params/5/max_bytes",
       "max_bytes must be an integer from 1 to 1048576"},
      {"params.toml", "max_bytes = 256", "max_bytes = 3", "/params/5/default",
       "default is 7 bytes, over max_bytes 3"},
      {"params.toml", "default = 50", "default = 50\nmax_bytes = 3", "/params/4/max_bytes",
       "unknown field \"max_bytes\""},
      {"endpoints.toml", "address = \"127.0.0.1:6379\"", "address = \"127.0.0.1\"",
       "/endpoints/graph/dev/address", "address must be \"host:port\""},
      {"endpoints.toml", "pool_size = 8", "pool_size = 2000", "/endpoints/graph/prod/pool_size",
       "from 1 to 1024"},
      {"endpoints.toml", "mode = \"cluster\"", "mode = \"sentinel\"", "/endpoints/graph/prod/mode",
       "mode must be \"single\" or \"cluster\""},
      {"endpoints.toml", "[endpoints.graph.test]", "[endpoints.graph.staging]",
       "/endpoints/graph/staging", "unknown field \"staging\""},
      {"endpoints.toml", "pool_size = 8", "pool_size = 8\nread_from_replicas = 1",
       "/endpoints/graph/prod/read_from_replicas", "read_from_replicas must be true or false"},
      {"endpoints.toml", "address = \"127.0.0.1:6379\"",
       "address = \"127.0.0.1:6379\"\nread_from_replicas = true",
       "/endpoints/graph/dev/read_from_replicas", "unknown field \"read_from_replicas\""},
      {"key_schemas.toml", "template = \"user:{id}\"", "template = \"user:{id}:{id}\"",
       "/key_schemas/0/template", "exactly one {id}"},
      {"key_schemas.toml", "endpoint = \"features\"", "endpoint = \"nowhere\"",
       "/key_schemas/4/endpoint", "\"nowhere\" is not defined in endpoints"},
      {"key_schemas.toml", "\"ctr\", \"title\"", "\"ctr\", \"colour\"", "/key_schemas/4/yields/4",
       "yields unknown key \"colour\""},
      {"key_schemas.toml", "yields = [\"country\", \"verified\"]",
       "yields = [\"country\", \"country\"]", "/key_schemas/0/yields/1",
       "yields \"country\" twice"},
      {"key_schemas.toml", "yields = [\"id\"]", "yields = [\"id\", \"ctr\"]",
       "/key_schemas/1/yields", "a list schema yields [\"id\"]"},
      {"key_schemas.toml", "yields = []", "yields = [\"id\"]", "/key_schemas/5/yields",
       "a set schema yields []"},
      {"key_schemas.toml", "yields = []", "yields = []\ncache = { ttl_ms = 1000, max_mb = 1 }",
       "/key_schemas/5/cache", "a set schema has no cache"},
      {"key_schemas.toml", "type = \"set\"", "type = \"zset\"", "/key_schemas/5/type",
       "type must be \"hash\", \"list\" or \"set\", got \"zset\""},
  });
}

TEST(RegistryTest, ReadsModelsWithTheirFeaturesBoundToKeys) {
  const auto registry = LoadRegistry(SourcePath("registry"));
  ASSERT_EQ(registry->models().size(), 1u);
  const ModelDef* model = registry->FindModel("feed_ctr");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->format, models::ModelFormat::kLightGbmText);
  EXPECT_EQ(model->file, "models/feed_ctr.txt");
  ASSERT_EQ(model->features.size(), 3u);
  EXPECT_EQ(model->features[1].name, "likes");
  EXPECT_EQ(model->features[1].key, "likes");
  EXPECT_FALSE(model->features[1].categorical);
  EXPECT_EQ(registry->FindModel("nope"), nullptr);
  // Without the models table a registry is what it was: the table is optional.
  TempDir dir;
  CopyRegistry(dir.path());
  std::filesystem::remove(dir / "models.toml");
  const auto without = LoadRegistry(dir.path());
  EXPECT_TRUE(without->models().empty());
  EXPECT_NE(without->digest(), registry->digest());
}

TEST(RegistryTest, ChecksEveryRuleOfModels) {
  ExpectProblems({
      {"models.toml", "format = \"lightgbm\"", "format = \"onnx\"", "/models/feed_ctr/format",
       "format must be one of lightgbm, xgboost, got \"onnx\""},
      {"models.toml", "format = \"lightgbm\"", "format = \"xgboost\"", "/models/feed_ctr/file",
       "ending in .json"},
      {"models.toml", "file = \"models/feed_ctr.txt\"", "file = \"../feed_ctr.txt\"",
       "/models/feed_ctr/file", "a relative path inside the registry directory"},
      {"models.toml", "doc = ", "size = 3\ndoc = ", "/models/feed_ctr/size",
       "unknown field \"size\""},
      {"models.toml", "[models.feed_ctr]", "[models.Feed]", "/models/Feed",
       "must be lower_snake_case"},
      {"models.toml", "{ name = \"likes\", key = \"likes\" }",
       "{ name = \"ctr\", key = \"likes\" }", "/models/feed_ctr/features/1/name",
       "feature \"ctr\" is listed twice"},
      {"models.toml", "{ name = \"likes\", key = \"likes\" }",
       "{ name = \"likes\", key = \"title\" }", "/models/feed_ctr/features/1/key",
       "key \"title\" is string; a numerical feature needs an int, float or bool key"},
      {"models.toml", "{ name = \"ctr\", key = \"ctr\" }",
       "{ name = \"ctr\", key = \"ctr\", categorical = true }", "/models/feed_ctr/features/0/key",
       "a categorical feature needs an int key"},
      {"models.toml", "{ name = \"likes\", key = \"likes\" }",
       "{ name = \"likes\", key = \"nope\" }", "/models/feed_ctr/features/1/key",
       "key \"nope\" is not a registry key"},
      {"models.toml", "{ name = \"likes\", key = \"likes\" }",
       "{ name = \"likes\", key = \"likes\", categorical = 1 }",
       "/models/feed_ctr/features/1/categorical", "categorical must be true or false"},
      {"models.toml", "{ name = \"likes\", key = \"likes\" }", "{ name = \"\", key = \"likes\" }",
       "/models/feed_ctr/features/1/name", "name must be the model's feature name"},
  });
  // A categorical feature bound to an int key is fine.
  TempDir dir;
  CopyRegistry(dir.path());
  std::string text = ReadFile(dir / "models.toml");
  text.replace(text.find("{ name = \"likes\", key = \"likes\" }"), 33,
               "{ name = \"likes\", key = \"likes\", categorical = true }");
  WriteFile(dir / "models.toml", text);
  EXPECT_TRUE(LoadRegistry(dir.path())->FindModel("feed_ctr")->features[1].categorical);
}

// Each bad `cache` of a key schema names the schema, the field and the allowed range.
TEST(RegistryTest, ChecksTheKeySchemaCache) {
  const auto cache = [](const std::string& line) { return std::string(kUserSchema) + line + "\n"; };
  const std::string ttl_range =
      "key schema \"user\" (cache): ttl_ms must be an integer from 1 to 86400000";
  const std::string mb_range =
      "key schema \"user\" (cache): max_mb must be an integer from 1 to 65536";
  for (const std::string ttl :
       {"ttl_ms = 0", "ttl_ms = 86400001", "ttl_ms = 1.5", "ttl_ms = \"60s\""}) {
    const auto problems = ProblemsWithEdit("key_schemas.toml", kUserSchema,
                                           cache("cache = { " + ttl + ", max_mb = 256 }"));
    EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache/ttl_ms", ttl_range)) << ttl;
    EXPECT_EQ(problems.size(), 1u) << ttl;
  }
  for (const std::string mb : {"max_mb = 0", "max_mb = 65537", "max_mb = true"}) {
    const auto problems = ProblemsWithEdit("key_schemas.toml", kUserSchema,
                                           cache("cache = { ttl_ms = 60000, " + mb + " }"));
    EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache/max_mb", mb_range)) << mb;
    EXPECT_EQ(problems.size(), 1u) << mb;
  }
  auto problems = ProblemsWithEdit("key_schemas.toml", kUserSchema,
                                   cache("cache = { ttl_ms = 60000, max_mb = 256, entries = 10 }"));
  EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache/entries",
                  "key schema \"user\" (cache): unknown field \"entries\" (allowed: ttl_ms, "
                  "max_mb, keys_expire)"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("(line 12)"), std::string::npos) << problems[0].message;
  problems = ProblemsWithEdit("key_schemas.toml", kUserSchema, cache("cache = { ttl_ms = 60000 }"));
  EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache",
                  "key schema \"user\" (cache): missing field \"max_mb\""));
  EXPECT_EQ(problems.size(), 1u);
  problems = ProblemsWithEdit("key_schemas.toml", kUserSchema, cache("cache = { max_mb = 256 }"));
  EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache",
                  "key schema \"user\" (cache): missing field \"ttl_ms\""));
  problems = ProblemsWithEdit("key_schemas.toml", kUserSchema,
                              cache("cache = { ttl_ms = 60000, max_mb = 256, keys_expire = 1 }"));
  EXPECT_TRUE(Has(problems, "key_schemas.toml", "/key_schemas/0/cache/keys_expire",
                  "key schema \"user\" (cache): keys_expire must be true or false"));
  EXPECT_EQ(problems.size(), 1u);
  ExpectProblems({
      {"key_schemas.toml", kUserSchema, "name = \"user\"\ncache = true\n", "/key_schemas/0/cache",
       "key schema \"user\": cache must be a table { ttl_ms = ..., max_mb = ... }, got true"},
      {"key_schemas.toml", kUserSchema, "name = \"user\"\ncache = [60000, 256]\n",
       "/key_schemas/0/cache", "key schema \"user\": cache must be a table"},
  });
}

TEST(RegistryTest, ADirectoryWithoutRegistryFiles) {
  TempDir dir;
  auto problems = ProblemsOf(dir.path());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kRegistryInvalid);
  problems = ProblemsOf(dir / "missing");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kFileUnreadable);
  EXPECT_EQ(problems[0].file, (dir / "missing").string());
}

}  // namespace
}  // namespace rankd::engine
