#include "test_files.h"

#include <sys/wait.h>
#include <cstdio>

namespace rankd::engine::testing {

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool RankcAvailable() {
  return std::filesystem::exists(SourcePath("dsl/dist/src/cli/main.js")) &&
         RunCommand("node --version >/dev/null 2>&1").status == 0;
}

CommandResult RunRankc(const std::string& arguments) {
  return RunCommand("cd '" + SourcePath("").string() + "' && node dsl/bin/rankc.js " + arguments);
}

}  // namespace rankd::engine::testing
