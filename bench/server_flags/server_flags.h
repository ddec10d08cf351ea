// Flag reading shared by rankd's benchmark server modes (--bench_echo_server,
// --bench_http_server): `--name value` or `--name=value`, the common --io_backend/--host/--port,
// and a one-line error naming the mode and the flag, with exit status 2.
//
// Plain functions; no state, no thread affinity.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rankd/runtime/reactor.h"

namespace rankd::bench {

// Prints "rankd <mode>: <message>" and exits with status 2.
[[noreturn]] void ServerFlagError(std::string_view mode, const std::string& message);

// A whole number in [0, max], or a ServerFlagError naming the flag.
unsigned ParseServerFlagUnsigned(std::string_view mode, std::string_view name,
                                 std::string_view value, unsigned max);

// The flags every benchmark server mode takes.
struct CommonServerFlags {
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};

// Walks argv (skipping `mode` itself): the common flags go into `common`, every other flag to
// `other(name, value)`, which returns false for a flag it does not know (an error).
void ParseServerFlags(
    int argc, char** argv, std::string_view mode, CommonServerFlags& common,
    const std::function<bool(std::string_view name, std::string_view value)>& other);

}  // namespace rankd::bench
