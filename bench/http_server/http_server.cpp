// HTTP benchmark server: GET /json answers {"message":"Hello, World!"} (application/json),
// GET /plaintext answers Hello, World! (text/plain), as tokio's tinyhttp example does. Prints
// "LISTENING <port>" once every shard listens; SIGTERM/SIGINT drain and exit 0.
#include "http_server.h"

#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rankd/http/server.h"

namespace rankd::bench {
namespace {

[[noreturn]] void FlagError(const std::string& message) {
  std::fprintf(stderr, "rankd --bench_http_server: %s\n", message.c_str());
  std::exit(2);
}

unsigned ParseUnsigned(std::string_view name, std::string_view value, unsigned max) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v > max) {
    FlagError(std::string(name) + ": expected 0.." + std::to_string(max) + ", got '" +
              std::string(value) + "'");
  }
  return v;
}

http::ServerOptions ParseFlags(int argc, char** argv) {
  http::ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--bench_http_server") continue;
    std::string_view name = arg, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      FlagError(std::string(name) + " needs a value");
    }
    if (name == "--io_backend") {
      if (value == "epoll") {
        o.backend = rt::IoBackend::kEpoll;
      } else if (value == "io_uring") {
        o.backend = rt::IoBackend::kIoUring;
      } else {
        FlagError("--io_backend: expected epoll or io_uring, got '" + std::string(value) + "'");
      }
    } else if (name == "--host") {
      o.host = std::string(value);
    } else if (name == "--port") {
      o.port = static_cast<std::uint16_t>(ParseUnsigned(name, value, 65535));
    } else if (name == "--shards") {
      o.shards = ParseUnsigned(name, value, 256);
      if (o.shards == 0) FlagError("--shards: expected at least 1");
    } else if (name == "--pin") {
      o.pin_shards = ParseUnsigned(name, value, 1) == 1;
    } else {
      FlagError("unknown flag '" + std::string(name) + "'");
    }
  }
  return o;
}

http::Router BenchRoutes() {
  http::Router router;
  router.Get("/json", [](http::Request&) {
    return http::Response::Static(200, R"({"message":"Hello, World!"})", "application/json");
  });
  router.Get("/plaintext", [](http::Request&) {
    return http::Response::Static(200, "Hello, World!", "text/plain");
  });
  return router;
}

}  // namespace

int RunHttpBenchServer(int argc, char** argv) {
  const http::ServerOptions options = ParseFlags(argc, argv);
  // Shard threads inherit the mask: only sigwait below takes SIGTERM/SIGINT.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  http::Server server(options, BenchRoutes());
  try {
    server.Start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rankd --bench_http_server: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "rankd http server on %s:%u, %zu shard(s), %s\n", options.host.c_str(),
               static_cast<unsigned>(server.port()), options.shards,
               rt::IoBackendName(server.backend()));
  std::printf("LISTENING %u\n", static_cast<unsigned>(server.port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server.Drain();
  return 0;
}

}  // namespace rankd::bench
