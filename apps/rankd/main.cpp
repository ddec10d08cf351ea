// rankd: the ranking engine's binary. Today it carries the runtime's benchmark mode; the ranking
// service (HTTP API, plans, Redis) is wired in here as it lands.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "bench_eventloop.h"
#include "echo_server.h"
#include "http_server.h"

namespace {

// Runs a server mode without its selecting flag, argv[0] naming it in its messages.
int RunServerMode(int (*run)(int argc, char** argv), std::string_view flag, int argc, char** argv) {
  std::string command = "rankd " + std::string(flag);
  std::vector<char*> args{command.data()};
  for (int i = 1; i < argc; ++i) {
    if (argv[i] != flag) args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  return run(static_cast<int>(args.size()) - 1, args.data());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--bench_eventloop" || arg.starts_with("--bench_eventloop=")) {
      return rankd::bench::RunBenchEventLoop(argc, argv);
    }
    if (arg == "--bench_echo_server") {
      return RunServerMode(rankd::bench::RunEchoServer, arg, argc, argv);
    }
    if (arg == "--bench_http_server") {
      return RunServerMode(rankd::bench::RunHttpBenchServer, arg, argc, argv);
    }
  }
  std::fprintf(stderr,
               "usage: rankd --bench_eventloop [--bench_eventloop_mode posts|timers|coro_timers|"
               "sleep_vs_pool|all] [--bench_n N] [--bench_producers N] [--bench_sleep_ms N] "
               "[--bench_tasks N] [--bench_json]\n"
               "       rankd --bench_echo_server [--io_backend epoll|io_uring] [--host H] "
               "[--port N]\n"
               "       rankd --bench_http_server [--shards N] [--io_backend epoll|io_uring] "
               "[--host H] [--port N]\n"
               "The ranking service is not part of this build yet; rankd runs its runtime "
               "benchmarks.\n");
  return argc > 1 ? 2 : 0;
}
