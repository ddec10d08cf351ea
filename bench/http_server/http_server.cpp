// HTTP benchmark server: GET /json answers {"message":"Hello, World!"} (application/json),
// GET /plaintext answers Hello, World! (text/plain), as tokio's tinyhttp example does. Prints
// "LISTENING <port>" once every shard listens; SIGTERM/SIGINT drain and exit 0.
#include "http_server.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "json_writer.h"
#include "rankd/http/server.h"
#include "rankd/runtime/shards.h"
#include "server_flags.h"

namespace rankd::bench {
namespace {

constexpr ServerFlag kFlags[] = {
    {"--shards", "N", "event loops, one listener each (default 1)"},
    {"--pin", "0|1", "pin each shard's thread to a core (default 0)"},
};

constexpr ServerModeHelp kHelp{
    .about =
        "The HTTP benchmark's server (bench/scripts/http_bench.py): GET /json and /plaintext\n"
        "as tokio's tinyhttp example serves them; prints LISTENING <port> once every shard\n"
        "listens; SIGTERM or SIGINT drains and stops it.\n",
    .own_flags = kFlags,
};

struct BenchServerConfig {
  rt::ShardOptions shards;
  http::ServerOptions server;
};

BenchServerConfig ParseFlags(int argc, char** argv) {
  BenchServerConfig c;
  c.shards.shards = 1;
  c.shards.name_prefix = "http";
  CommonServerFlags common;
  const std::string_view command = argv[0];
  ParseServerFlags(argc, argv, kHelp, common, [&](std::string_view name, std::string_view value) {
    if (name == "--shards") {
      c.shards.shards = ParseServerFlagUnsigned(command, name, value, 256);
      if (c.shards.shards == 0) ServerFlagError(command, "--shards: expected at least 1");
    } else if (name == "--pin") {
      c.shards.pin_to_cores = ParseServerFlagUnsigned(command, name, value, 1) == 1;
    } else {
      return false;
    }
    return true;
  });
  c.shards.loop.backend = common.backend;
  c.server.host = common.host;
  c.server.port = common.port;
  return c;
}

http::Router BenchRoutes() {
  http::Router router;
  // The object is serialized for every request, as the benchmark's rule asks (the tokio peers
  // run serde_json per request).
  router.Get("/json", [](http::Request&) {
    std::string body;
    body.reserve(64);  // the one allocation: {"message":"Hello, World!"} is 27 bytes
    JsonObjectWriter(body).Member("message", "Hello, World!").Close();
    return http::Response::Text(200, std::move(body), "application/json");
  });
  router.Get("/plaintext", [](http::Request&) {
    return http::Response::Static(200, "Hello, World!", "text/plain");
  });
  return router;
}

}  // namespace

int RunHttpBenchServer(int argc, char** argv) {
  const BenchServerConfig config = ParseFlags(argc, argv);
  // Shard threads inherit the mask: only sigwait below takes SIGTERM/SIGINT.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // Cannot fail: pthread_sigmask's only error is an invalid `how` (EINVAL).
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rt::ShardSet shards(config.shards);
  std::unique_ptr<http::Server> server;
  try {
    server = std::make_unique<http::Server>(shards, config.server, BenchRoutes());
    shards.Start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  std::fprintf(stderr, "rankd http server on %s:%u, %zu shard(s), %s\n", config.server.host.c_str(),
               static_cast<unsigned>(server->port()), shards.size(),
               rt::IoBackendName(server->backend()));
  std::printf("LISTENING %u\n", static_cast<unsigned>(server->port()));
  std::fflush(stdout);
  int sig = 0;
  // sigwait's only error is an invalid set (EINVAL); whatever it returns, the server drains.
  sigwait(&signals, &sig);
  server->Drain();
  server.reset();
  shards.Stop();
  return 0;
}

}  // namespace rankd::bench
