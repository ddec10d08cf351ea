#include "server_flags.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace rankd::bench {

void ServerFlagError(std::string_view mode, const std::string& message) {
  std::fprintf(stderr, "rankd %.*s: %s\n", static_cast<int>(mode.size()), mode.data(),
               message.c_str());
  std::exit(2);
}

unsigned ParseServerFlagUnsigned(std::string_view mode, std::string_view name,
                                 std::string_view value, unsigned max) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v > max) {
    ServerFlagError(mode, std::string(name) + ": expected 0.." + std::to_string(max) + ", got '" +
                              std::string(value) + "'");
  }
  return v;
}

void ParseServerFlags(
    int argc, char** argv, std::string_view mode, CommonServerFlags& common,
    const std::function<bool(std::string_view name, std::string_view value)>& other) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == mode) continue;
    std::string_view name = arg, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      ServerFlagError(mode, std::string(name) + " needs a value");
    }
    if (name == "--io_backend") {
      if (value == "epoll") {
        common.backend = rt::IoBackend::kEpoll;
      } else if (value == "io_uring") {
        common.backend = rt::IoBackend::kIoUring;
      } else {
        ServerFlagError(
            mode, "--io_backend: expected epoll or io_uring, got '" + std::string(value) + "'");
      }
    } else if (name == "--host") {
      common.host = std::string(value);
    } else if (name == "--port") {
      common.port = static_cast<std::uint16_t>(ParseServerFlagUnsigned(mode, name, value, 65535));
    } else if (!other(name, value)) {
      ServerFlagError(mode, "unknown flag '" + std::string(name) + "'");
    }
  }
}

}  // namespace rankd::bench
