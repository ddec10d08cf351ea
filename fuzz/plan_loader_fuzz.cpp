// libFuzzer target: the plan loader (parse, schema, every validation rule, the typed Plan) on
// arbitrary bytes, against the repository's registry. Every input must end in problems, each with
// a code and the file's name, or in a Plan whose order puts every node after its inputs; a crash,
// a hang, a leak, a sanitizer report or a broken invariant is a finding.
//
// Input: byte 0 picks the options (bit 0: check the digest as the loaders do; when clear the
// digest is not checked, so mutated artifacts reach the rules after it), the rest is the artifact.
// Seeds: fuzz/corpus/plan_loader/ (the golden artifacts and corpus cases, compact), written by
// fuzz/make_plan_loader_seeds.py.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan_loader.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "plan loader invariant broken: %s\n", what.c_str());
  std::abort();
}

const rankd::engine::Registry& TheRegistry() {
  static const std::shared_ptr<const rankd::engine::Registry> registry =
      rankd::engine::LoadRegistry(RANKD_REGISTRY_DIR);
  return *registry;
}

void CheckPlan(const rankd::engine::Plan& plan) {
  if (plan.order.size() != plan.nodes.size()) Broken("order does not list every node");
  std::vector<bool> placed(plan.nodes.size(), false);
  for (const std::size_t i : plan.order) {
    if (i >= plan.nodes.size() || placed[i]) Broken("order names a node twice or out of range");
    const rankd::engine::Node& node = plan.nodes[i];
    if (node.input_index.size() != node.inputs.size()) Broken("input_index does not match inputs");
    for (const std::size_t input : node.input_index) {
      if (input >= plan.nodes.size() || !placed[input]) Broken("a node comes before its input");
    }
    placed[i] = true;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  rankd::engine::PlanCheckOptions options;
  options.check_digest = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  rankd::engine::ProblemSink problems("fuzz.json");
  const std::shared_ptr<const rankd::engine::Plan> plan =
      rankd::engine::LoadPlanText(text, TheRegistry(), options, problems);
  if (plan == nullptr) {
    if (problems.empty()) Broken("refused without a problem");
    for (const rankd::engine::LoadProblem& p : problems.problems()) {
      if (p.code.empty() || p.file != "fuzz.json" || p.message.empty())
        Broken("a problem without its code or file");
      if (p.ToString().empty()) Broken("a problem that prints as nothing");
    }
    return 0;
  }
  if (!problems.empty()) Broken("a plan with problems");
  CheckPlan(*plan);
  return 0;
}
