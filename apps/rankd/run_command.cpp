#include "run_command.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_flags.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/api/ranker.h"
#include "rankd/engine/plan/compiled_plan.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --plans DIR --registry DIR [--env dev|test|prod] [--endpoint NAME=HOST:PORT]...\n"
    "       [--scheduler async|sync] [--deadline_ms N] [--node_timeout_ms N] [--cpu_threads N]\n"
    "Reads ranking requests from stdin, one JSON object per line, and writes one response per\n"
    "line to stdout, in order (docs/engine.md). Exits 0 at the end of input; a bad request is a\n"
    "response, not an exit.\n";

using RunFlags = EngineFlags;

// The flags, or nullopt after printing what is wrong (exit 2).
std::optional<RunFlags> ParseFlags(int argc, char** argv) {
  RunFlags flags;
  try {
    ForEachFlag(argc, argv, kEngineFlagSpecs,
                [&flags](std::string_view name, std::string_view value) {
                  return ApplyEngineFlag(flags, name, value);
                });
    RequireEngineFlags(flags);
    ApplyCpuThreads(flags);
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return std::nullopt;
  }
  return flags;
}

// Answers every line of stdin, in order. Returns the exit code.
rt::Task<int> Serve(std::shared_ptr<const engine::CompiledPlanStore> store,
                    std::map<std::string, engine::EndpointTarget> targets, const RunFlags& flags,
                    const char* command) {
  engine::EndpointSet endpoints(targets);
  try {
    co_await endpoints.Start(std::chrono::seconds(2));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", command, e.what());
    co_return 1;
  }
  engine::Ranker ranker(std::move(store), endpoints, RankerOptionsOf(flags));
  std::string line;
  std::string error_body;
  while (std::getline(std::cin, line)) {
    std::string body;
    try {
      engine::Ranker::Answer answer = co_await ranker.Rank(line);
      body = std::move(answer.body);
    } catch (const std::exception& e) {
      body.clear();
      engine::WriteErrorBody(body, std::string_view(), {engine::ErrorCode::kInternal, e.what()});
    }
    body.push_back('\n');
    std::fwrite(body.data(), 1, body.size(), stdout);
    std::fflush(stdout);
  }
  co_return 0;
}

}  // namespace

int RunRun(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    std::fputs(kEngineFlagsHelp.data(), stdout);
    return 0;
  }
  const std::optional<RunFlags> flags = ParseFlags(argc, argv);
  if (!flags) return 2;
  std::shared_ptr<const engine::CompiledPlanStore> store;
  std::map<std::string, engine::EndpointTarget> targets;
  try {
    store = std::make_shared<const engine::CompiledPlanStore>(
        engine::LoadPlanStore(flags->plans, flags->registry));
    targets = engine::ResolveEndpoints(store->store().registry(), flags->env, flags->endpoints);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the plan store does not load: %s\n", argv[0], e.what());
    return 2;
  }
  std::ios::sync_with_stdio(false);
  rt::EventLoop loop;
  return loop.RunUntilComplete(Serve(std::move(store), std::move(targets), *flags, argv[0]));
}

}  // namespace rankd::cli
