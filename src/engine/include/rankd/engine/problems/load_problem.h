// LoadProblem and LoadError: what loading a registry, a plan or a plan store reports
// (docs/plan-format.md, "Problem codes"). The bottom of the engine's layers: every loader
// (registry, plan, store, models) speaks this vocabulary.
//
// Plain values; any thread.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace rankd::engine {

// One problem found while loading.
struct LoadProblem {
  std::string file;     // the file it is in
  std::string code;     // the problem code (docs/plan-format.md, "Problem codes")
  std::string pointer;  // RFC 6901 pointer of the field in that file ("" for the whole file)
  std::string node;     // the node id, "$plan" for the plan as a whole, "" outside plans
  std::string message;  // what is wrong, for people

  // "file: /pointer (node n): message [code]"
  std::string ToString() const;
};

// Thrown when a registry or plan store cannot be loaded; what() lists every problem.
class LoadError : public std::runtime_error {
 public:
  explicit LoadError(std::vector<LoadProblem> problems);
  const std::vector<LoadProblem>& problems() const noexcept { return problems_; }

 private:
  std::vector<LoadProblem> problems_;
};

}  // namespace rankd::engine
