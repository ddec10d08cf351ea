// libFuzzer target: the expression VM (src/engine/vm) against the row-at-a-time tree walk
// (tests/engine/tree_walk.h) on programs and data decoded from the input. The front of the input,
// read forwards, draws the case's shape (row count, an expression or a predicate over int, float,
// bool and string keys, params, constants and a tree model); its back, read backwards, draws the
// data (the columns' values and nulls, a random selection, the params' values). Both run through
// the same generator and comparison as the differential test (tests/engine/vm_cases.h): any result
// that is not bit-identical to the tree walk's, or a filter keeping other rows, aborts; a crash, a
// leak or a sanitizer report is a finding too.
//
// Seeds: fuzz/corpus/vm/ (a few byte strings; any input decodes to a valid case).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_bytes.h"
#include "test_models.h"
#include "test_registry.h"
#include "vm_cases.h"

namespace {

using rankd::fuzz::FuzzBytes;
using FuzzGenerator = rankd::engine::testing::Generator<FuzzBytes>;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::shared_ptr<const rankd::engine::Registry> registry =
      rankd::engine::testing::TestRegistry();
  static const std::vector<rankd::engine::PlanParam> params = rankd::engine::testing::TestParams();
  static const rankd::engine::ModelSet models = rankd::engine::testing::TestModels(*registry);
  FuzzGenerator shape{FuzzBytes(data, size, false), /*models=*/true};
  FuzzGenerator values{FuzzBytes(data, size, true), /*models=*/true};
  // Mostly small sets; now and then more than a batch (1,024 rows) to cross batch boundaries.
  const std::size_t rows =
      1 + static_cast<std::size_t>(shape.Chance(3) ? shape.Pick(2500) : shape.Pick(40));
  const std::optional<std::string> diff =
      rankd::engine::testing::RunCase(shape, values, rows, *registry, params, &models);
  if (diff) {
    std::fprintf(stderr, "vm and tree walk differ: %s\n", diff->c_str());
    std::abort();
  }
  return 0;
}
