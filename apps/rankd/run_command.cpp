#include "run_command.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
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
#include "rankd/engine/experiments/capture_file.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --plans DIR --registry DIR [--env dev|test|prod] [--endpoint NAME=HOST:PORT]...\n"
    "       [--scheduler async|sync] [--deadline_ms N] [--node_timeout_ms N] [--cpu_threads N]\n"
    "       [--capture FILE]\n"
    "Reads ranking requests from stdin, one JSON object per line, and writes one response per\n"
    "line to stdout, in order (docs/engine.md). Exits 0 at the end of input; a bad request is a\n"
    "response, not an exit.\n"
    "  --capture FILE     append every request, its response and the Redis replies its plan\n"
    "                     read to FILE, one line each, for rankd replay (docs/experiments.md)\n";

struct RunFlags : EngineFlags {
  std::string capture;  // the capture file; empty: none
};

// The flags, or nullopt after printing what is wrong (exit 2).
std::optional<RunFlags> ParseFlags(int argc, char** argv) {
  RunFlags flags;
  try {
    std::vector<FlagSpec> specs(kEngineFlagSpecs.begin(), kEngineFlagSpecs.end());
    specs.push_back({"--capture", FlagType::kString});
    ForEachFlag(argc, argv, specs, [&flags](std::string_view name, std::string_view value) {
      if (name == "--capture") {
        flags.capture = value;
        return true;
      }
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
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> capture_file(nullptr, &std::fclose);
  if (!flags.capture.empty()) {
    capture_file.reset(std::fopen(flags.capture.c_str(), "ae"));
    if (!capture_file) {
      std::fprintf(stderr, "%s: --capture %s: cannot open (%s)\n", command, flags.capture.c_str(),
                   std::strerror(errno));
      co_return 2;
    }
  }
  std::string line;
  std::string capture_line;
  while (std::getline(std::cin, line)) {
    std::string body;
    engine::RequestCapture capture;
    engine::experiments::CaptureRecord record;
    try {
      engine::Ranker::Answer answer = co_await ranker.Rank(
          line, engine::Ranker::Context{.capture = capture_file ? &capture : nullptr,
                                        .capture_all = true});
      body = std::move(answer.body);
      record.request_id = answer.request_id;
      record.plan = answer.plan;
      if (answer.compiled) record.plan_digest = answer.compiled->plan().digest;
    } catch (const std::exception& e) {
      body.clear();
      engine::WriteErrorBody(body, std::string_view(), {engine::ErrorCode::kInternal, e.what()});
    }
    if (capture_file) {
      record.request = line;
      record.response = body;
      record.commands = std::move(capture.commands());
      capture_line.clear();
      engine::experiments::AppendCaptureLine(capture_line, record);
      if (std::fwrite(capture_line.data(), 1, capture_line.size(), capture_file.get()) !=
              capture_line.size() ||
          std::fflush(capture_file.get()) != 0) {
        std::fprintf(stderr, "%s: --capture %s: cannot write (%s)\n", command,
                     flags.capture.c_str(), std::strerror(errno));
        co_return 1;
      }
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
