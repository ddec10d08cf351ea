#include <string>
#include <utility>

#include "rankd/engine/problems/load_problem.h"

namespace rankd::engine {
namespace {

std::string Describe(const std::vector<LoadProblem>& problems) {
  if (problems.empty()) return "loading failed";
  std::string text =
      problems.size() == 1 ? "1 problem:" : std::to_string(problems.size()) + " problems:";
  for (const LoadProblem& p : problems) {
    text += "\n  ";
    text += p.ToString();
  }
  return text;
}

}  // namespace

std::string LoadProblem::ToString() const {
  std::string text = file;
  if (!pointer.empty()) text += (text.empty() ? "" : ": ") + pointer;
  if (!node.empty()) text += " (node " + node + ")";
  text += ": " + message + " [" + code + "]";
  return text;
}

LoadError::LoadError(std::vector<LoadProblem> problems)
    : std::runtime_error(Describe(problems)), problems_(std::move(problems)) {}

}  // namespace rankd::engine
