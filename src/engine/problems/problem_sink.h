// Collects the problems found in one file (a plan artifact, a store index) as LoadProblems.
//
// Plain value; one loader at a time (not shared between threads).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/problems/load_problem.h"

namespace rankd::engine {

class ProblemSink {
 public:
  explicit ProblemSink(std::string file) : file_(std::move(file)) {}

  void Add(std::string_view code, std::string pointer, std::string_view node, std::string message) {
    problems_.push_back(LoadProblem{file_, std::string(code), std::move(pointer), std::string(node),
                                    std::move(message)});
  }

  const std::string& file() const noexcept { return file_; }
  bool empty() const noexcept { return problems_.empty(); }
  std::size_t size() const noexcept { return problems_.size(); }
  const std::vector<LoadProblem>& problems() const noexcept { return problems_; }
  std::vector<LoadProblem> Take() { return std::move(problems_); }

 private:
  std::string file_;
  std::vector<LoadProblem> problems_;
};

}  // namespace rankd::engine
