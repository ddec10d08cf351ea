#include "plan/plan_loader.h"

#include <utility>

#include "json/parser.h"
#include "plan/plan_builder.h"

namespace rankd::engine {

std::shared_ptr<const Plan> LoadPlanText(std::string_view text, const Registry& registry,
                                         const PlanCheckOptions& options, ProblemSink& problems) {
  auto parsed = json::Parse(text);
  if (!parsed) {
    problems.Add(parsed.error().code, std::move(parsed.error().pointer), "$plan",
                 "invalid JSON " + std::move(parsed.error().message));
    return nullptr;
  }
  std::optional<PlanAnalysis> analysis = CheckPlan(*parsed, registry, options, problems);
  if (!analysis) return nullptr;
  return std::make_shared<const Plan>(
      BuildPlan(*parsed, std::move(*analysis), problems.file(), std::string(text)));
}

}  // namespace rankd::engine
