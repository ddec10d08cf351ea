// Flags of the server peers (Asio echo and HTTP servers): `--host ADDR` (default 127.0.0.1),
// `--port P` (0, the default, picks an ephemeral port), `--help`, plus whatever a peer adds
// through `extra`. A flag takes its value as `--name=value` or `--name value`; a bad or unknown
// flag prints "<prog>: <what> (try --help)" and exits with status 2.
//
// Self-contained like the other peer helpers (no rankd code), so that a change to rankd cannot
// change how a peer is driven.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

struct PeerServerFlags {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
};

[[noreturn]] inline void PeerFlagError(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
  std::exit(2);
}

// A decimal integer in [lo, hi], or a flag error naming `name`.
inline long PeerFlagInteger(const char* prog, std::string_view name, const std::string& v, long lo,
                            long hi) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi) {
    PeerFlagError(prog, std::string(name) + ": expected " + std::to_string(lo) + ".." +
                            std::to_string(hi) + ", got '" + v + "'");
  }
  return n;
}

// `usage` is printed for --help (with %s for the program name). `extra(name, value)` returns
// false for a flag it does not know.
inline PeerServerFlags ParsePeerServerFlags(
    int argc, char** argv, const char* usage,
    const std::function<bool(std::string_view name, const std::string& value)>& extra = {}) {
  const char* prog = argc > 0 ? argv[0] : "peer";
  PeerServerFlags f;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") {
      std::printf(usage, prog);
      std::exit(0);
    }
    std::string_view name = arg;
    std::string_view value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      PeerFlagError(prog, std::string(name) + " needs a value");
    }
    const std::string v(value);
    if (name == "--host") {
      f.host = v;
    } else if (name == "--port") {
      f.port = static_cast<unsigned short>(PeerFlagInteger(prog, name, v, 0, 65535));
    } else if (!extra || !extra(name, v)) {
      PeerFlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
  }
  return f;
}
