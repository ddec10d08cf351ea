// Flag reading shared by rankd's benchmark server modes (`rankd bench echo-server`,
// `rankd bench http-server`, also spelled --bench_echo_server and --bench_http_server):
// `--name value` or `--name=value`, the common --io_backend/--host/--port, --help, and a one-line
// error naming the command and the flag, with exit status 2.
//
// Plain functions; no state, no thread affinity.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "rankd/runtime/reactor.h"

namespace rankd::bench {

// Prints "<command>: <message>" and exits with status 2.
[[noreturn]] void ServerFlagError(std::string_view command, const std::string& message);

// A whole number in [0, max], or a ServerFlagError naming the flag.
unsigned ParseServerFlagUnsigned(std::string_view command, std::string_view name,
                                 std::string_view value, unsigned max);

// The flags every benchmark server mode takes.
struct CommonServerFlags {
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};

// A flag a mode takes: its name, what its value looks like, and what it does (--help's line).
struct ServerFlag {
  std::string_view name;  // "--shards"
  std::string_view arg;   // "N"
  std::string_view help;
};

// What --help prints about a mode, besides its usage line and the common flags; its own flags
// are also the names it knows (any other is an unknown flag).
struct ServerModeHelp {
  std::string_view about;  // what the mode serves; lines ending in '\n'
  std::span<const ServerFlag> own_flags;
};

// Walks argv[1..]; argv[0] is the command's name in messages (e.g. "rankd bench echo-server").
// The common flags go into `common`, every other flag to `other(name, value)`, which returns
// false for a flag it does not know (an error). --help or -h prints the usage and exits 0.
void ParseServerFlags(
    int argc, char** argv, const ServerModeHelp& help, CommonServerFlags& common,
    const std::function<bool(std::string_view name, std::string_view value)>& other);

}  // namespace rankd::bench
