// Reading the repository's test data (tests/plans, registry/, dsl/test/golden) from engine tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace rankd::engine::testing {

// A path below the repository root.
inline std::filesystem::path SourcePath(const std::filesystem::path& relative) {
  return std::filesystem::path(RANKD_SOURCE_DIR) / relative;
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A fresh directory under the system's temporary directory, removed with everything in it when
// the object goes away.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("rankd_engine_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A copy of the repository's registry/ (its model files too) in a temporary directory, to be
// edited by a test.
inline void CopyRegistry(const std::filesystem::path& to) {
  std::filesystem::create_directories(to);
  std::filesystem::copy(SourcePath("registry"), to, std::filesystem::copy_options::recursive);
}

// The registry digest the golden artifacts were compiled against.
inline std::string GoldenRegistryDigest() {
  const std::string feed = ReadFile(SourcePath("dsl/test/golden/feed.json"));
  const std::size_t at = feed.find("\"registry_digest\": \"");
  return feed.substr(at + 20, 64);
}

// The stdout of a shell command, with its exit status; for running rankc.
struct CommandResult {
  int status = -1;
  std::string output;
};
CommandResult RunCommand(const std::string& command);

// Whether rankc can run here: node on the PATH and the TypeScript built (dsl/dist, by
// `npm ci` / `npm run build`, which `make test` does before the C++ tests).
bool RankcAvailable();
// `node dsl/bin/rankc.js <arguments>` from the repository root.
CommandResult RunRankc(const std::string& arguments);

}  // namespace rankd::engine::testing
