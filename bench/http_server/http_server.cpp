// HTTP benchmark server: GET /json answers {"message":"Hello, World!"} (application/json),
// GET /plaintext answers Hello, World! (text/plain), as tokio's tinyhttp example does. Prints
// "LISTENING <port>" once every shard listens; SIGTERM/SIGINT drain and exit 0.
#include "http_server.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "rankd/http/server.h"
#include "server_flags.h"

namespace rankd::bench {
namespace {

constexpr std::string_view kMode = "--bench_http_server";

http::ServerOptions ParseFlags(int argc, char** argv) {
  http::ServerOptions o;
  CommonServerFlags common;
  ParseServerFlags(argc, argv, kMode, common, [&o](std::string_view name, std::string_view value) {
    if (name == "--shards") {
      o.shards = ParseServerFlagUnsigned(kMode, name, value, 256);
      if (o.shards == 0) ServerFlagError(kMode, "--shards: expected at least 1");
    } else if (name == "--pin") {
      o.pin_shards = ParseServerFlagUnsigned(kMode, name, value, 1) == 1;
    } else {
      return false;
    }
    return true;
  });
  o.backend = common.backend;
  o.host = common.host;
  o.port = common.port;
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
