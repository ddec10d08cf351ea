// The VM against the tree-walking reference evaluator (tree_walk.h) on random expressions and
// predicates (some scoring test_models.h's tree model) over random columns with nulls: every result
// bit-identical (or both null), every filter keeping exactly the rows the reference says are true.
// 100,000 cases per run (10,000 under a sanitizer, where the VM fuzz target covers more in make
// test-fuzz), from a fixed seed (a failure prints the case's seed to replay it). The cases come
// from vm_cases.h, which the VM fuzz target (fuzz/vm_fuzz.cpp) shares.
#include <gtest/gtest.h>

#include "test_models.h"
#include "test_registry.h"
#include "vm_cases.h"

namespace rankd::engine {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCases = 10'000;
#else
constexpr int kCases = 100'000;
#endif

TEST(VmDifferentialTest, RandomExpressionsAndPredicatesMatchTheTreeWalk) {
  const auto registry = testing::TestRegistry();
  const std::vector<PlanParam> params = testing::TestParams();
  const ModelSet models = testing::TestModels(*registry);
  std::uint64_t mismatches = 0;
  for (int c = 0; c < kCases && mismatches < 5; ++c) {
    const std::uint64_t seed = 0x5eed0000u + static_cast<std::uint64_t>(c);
    testing::Generator<testing::SplitMix64> gen{testing::SplitMix64(seed), /*models=*/true};
    const std::size_t rows = 1 + static_cast<std::size_t>(gen.Pick(c % 50 == 0 ? 2500 : 40));
    if (const std::optional<std::string> diff =
            testing::RunCase(gen, gen, rows, *registry, params, &models)) {
      ++mismatches;
      ADD_FAILURE() << "case seed " << seed << ": " << *diff;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

}  // namespace
}  // namespace rankd::engine
