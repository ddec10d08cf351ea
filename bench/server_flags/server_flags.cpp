#include "server_flags.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

namespace rankd::bench {
namespace {

constexpr ServerFlag kCommonFlags[] = {
    {"--io_backend", "epoll|io_uring", "reactor backend (default epoll)"},
    {"--host", "H", "address to listen on (default 127.0.0.1)"},
    {"--port", "N", "port to listen on; 0 (the default) picks a free one"},
};

void PrintFlags(std::span<const ServerFlag> flags) {
  for (const ServerFlag& f : flags) {
    const std::string head = std::string(f.name) + " " + std::string(f.arg);
    std::printf("  %-29s %.*s\n", head.c_str(), static_cast<int>(f.help.size()), f.help.data());
  }
}

void PrintServerUsage(std::string_view command, const ServerModeHelp& help) {
  std::printf("usage: %.*s [flags]\n%.*s", static_cast<int>(command.size()), command.data(),
              static_cast<int>(help.about.size()), help.about.data());
  PrintFlags(kCommonFlags);
  PrintFlags(help.own_flags);
  std::printf("Flags take `--flag value` or `--flag=value`.\n");
}

bool Known(std::string_view name, const ServerModeHelp& help) {
  for (const std::span<const ServerFlag> flags :
       {std::span<const ServerFlag>(kCommonFlags), help.own_flags}) {
    for (const ServerFlag& f : flags) {
      if (f.name == name) return true;
    }
  }
  return false;
}

}  // namespace

void ServerFlagError(std::string_view command, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(command.size()), command.data(),
               message.c_str());
  std::exit(2);
}

unsigned ParseServerFlagUnsigned(std::string_view command, std::string_view name,
                                 std::string_view value, unsigned max) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v > max) {
    ServerFlagError(command, std::string(name) + ": expected 0.." + std::to_string(max) +
                                 ", got '" + std::string(value) + "'");
  }
  return v;
}

void ParseServerFlags(
    int argc, char** argv, const ServerModeHelp& help, CommonServerFlags& common,
    const std::function<bool(std::string_view name, std::string_view value)>& other) {
  const std::string_view command = argv[0];
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") {
      PrintServerUsage(command, help);
      std::exit(0);
    }
    std::string_view name = arg, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) name = arg.substr(0, eq);
    if (!Known(name, help)) ServerFlagError(command, "unknown flag '" + std::string(name) + "'");
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      ServerFlagError(command, std::string(name) + " needs a value");
    }
    if (name == "--io_backend") {
      if (value == "epoll") {
        common.backend = rt::IoBackend::kEpoll;
      } else if (value == "io_uring") {
        common.backend = rt::IoBackend::kIoUring;
      } else {
        ServerFlagError(
            command, "--io_backend: expected epoll or io_uring, got '" + std::string(value) + "'");
      }
    } else if (name == "--host") {
      common.host = std::string(value);
    } else if (name == "--port") {
      common.port =
          static_cast<std::uint16_t>(ParseServerFlagUnsigned(command, name, value, 65535));
    } else if (!other(name, value)) {
      ServerFlagError(command, "unknown flag '" + std::string(name) + "'");
    }
  }
}

}  // namespace rankd::bench
