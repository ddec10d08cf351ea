#include "problems/file_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "problems/problem_codes.h"

namespace rankd::engine {

std::optional<std::string> ReadFileText(const std::filesystem::path& path,
                                        std::vector<LoadProblem>& problems, std::size_t max_bytes) {
  const auto problem = [&](std::string_view code, std::string message) {
    problems.push_back(LoadProblem{path.string(), std::string(code), "", "", std::move(message)});
    return std::nullopt;
  };
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec) return problem(codes::kFileUnreadable, "cannot read the file: " + ec.message());
  if (!std::filesystem::is_regular_file(status)) {
    return problem(codes::kFileUnreadable, "cannot read the file: it is not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return problem(codes::kFileUnreadable,
                   std::string("cannot open the file: ") + std::strerror(errno));
  std::string text;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return problem(codes::kFileTooLarge, "the file is larger than " +
                                               std::to_string(max_bytes / (1024 * 1024)) + " MiB");
    }
  }
  if (in.bad()) return problem(codes::kFileUnreadable, "reading the file failed");
  return text;
}

}  // namespace rankd::engine
