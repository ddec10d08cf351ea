#include "version_command.h"

#include <cstdio>
#include <string>
#include <string_view>

#include "build_info.h"
#include "rankd/runtime/reactor.h"

namespace rankd::cli {
namespace {

// "epoll, io_uring", or epoll and why io_uring cannot be set up here (old kernel, seccomp,
// kernel.io_uring_disabled, RANKD_DISABLE_IO_URING): what --io_backend io_uring would get.
std::string IoBackends() {
  std::string fallback_note;
  const auto reactor = rt::MakeReactor(rt::IoBackend::kIoUring, &fallback_note);
  if (reactor->backend() == rt::IoBackend::kIoUring) return "epoll, io_uring";
  return "epoll (" + fallback_note + ")";
}

}  // namespace

int RunVersion(int argc, char** argv) {
  if (argc > 1) {
    const std::string_view arg = argv[1];
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: %s\n"
          "Prints rankd's version, its build type, compiler and the git commit it was configured\n"
          "from, and the io backends (--io_backend) that work on this machine.\n",
          argv[0]);
      return 0;
    }
    std::fprintf(stderr, "%s: unexpected argument '%s' (try %s --help)\n", argv[0], argv[1],
                 argv[0]);
    return 2;
  }
  const std::string commit = build_info::kGitCommit.empty()
                                 ? "unknown (not configured from a git checkout)"
                                 : std::string(build_info::kGitCommit) + " (at configure time)";
  std::printf(
      "rankd %s\n"
      "build type:  %s\n"
      "compiler:    %s\n"
      "git commit:  %s\n"
      "io backends: %s\n",
      std::string(build_info::kVersion).c_str(), std::string(build_info::kBuildType).c_str(),
      std::string(build_info::kCompiler).c_str(), commit.c_str(), IoBackends().c_str());
  return 0;
}

}  // namespace rankd::cli
