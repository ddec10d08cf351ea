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

#include "rankd/engine/compiled_plan.h"
#include "rankd/engine/endpoints.h"
#include "rankd/engine/plan_store.h"
#include "rankd/engine/rank_api.h"
#include "rankd/engine/ranker.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --plans DIR --registry DIR [--env dev|test|prod] [--endpoint NAME=HOST:PORT]...\n"
    "       [--scheduler async|sync] [--deadline_ms N]\n"
    "Reads ranking requests from stdin, one JSON object per line, and writes one response per\n"
    "line to stdout, in order (docs/engine.md). Exits 0 at the end of input; a bad request is a\n"
    "response, not an exit.\n"
    "  --plans DIR        the plan store: DIR/index.json and its plans (rankc build --out DIR)\n"
    "  --registry DIR     the registry the plans were built against (registry/*.toml)\n"
    "  --env ENV          which of the registry's endpoint addresses to use (default dev)\n"
    "  --endpoint SPEC    NAME=HOST:PORT or NAME=cluster:HOST:PORT[,HOST:PORT...]: overrides\n"
    "                     one endpoint's address (repeatable)\n"
    "  --scheduler S      async (default): nodes as soon as their inputs are done, commands\n"
    "                     pipelined; sync: one node and one Redis command at a time (baseline)\n"
    "  --deadline_ms N    the deadline of a request without deadline_ms (default 100)\n";

struct RunFlags {
  std::string plans;
  std::string registry;
  engine::Environment env = engine::Environment::kDev;
  std::vector<engine::EndpointOverride> endpoints;
  engine::Scheduler scheduler = engine::Scheduler::kAsync;
  std::int64_t deadline_ms = 100;
};

// The flags, or nullopt after printing what is wrong (exit 2).
std::optional<RunFlags> ParseFlags(int argc, char** argv) {
  RunFlags flags;
  const auto bad = [argv](const std::string& what) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], what.c_str(), argv[0]);
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view name = argv[i];
    std::optional<std::string_view> value;
    if (const std::size_t eq = name.find('=');
        name.starts_with("--") && eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool takes_value = name == "--plans" || name == "--registry" || name == "--env" ||
                             name == "--endpoint" || name == "--scheduler" ||
                             name == "--deadline_ms";
    if (!takes_value) return bad("unknown flag '" + std::string(argv[i]) + "'");
    if (!value) {
      if (i + 1 >= argc) return bad(std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (name == "--plans") {
      flags.plans = *value;
    } else if (name == "--registry") {
      flags.registry = *value;
    } else if (name == "--env") {
      const auto env = engine::ParseEnvironment(*value);
      if (!env) return bad("--env must be dev, test or prod, not '" + std::string(*value) + "'");
      flags.env = *env;
    } else if (name == "--endpoint") {
      std::string error;
      auto parsed = engine::ParseEndpointOverride(*value, &error);
      if (!parsed) return bad("--endpoint " + std::string(*value) + ": " + error);
      flags.endpoints.push_back(std::move(*parsed));
    } else if (name == "--scheduler") {
      if (*value == "async") {
        flags.scheduler = engine::Scheduler::kAsync;
      } else if (*value == "sync") {
        flags.scheduler = engine::Scheduler::kSync;
      } else {
        return bad("--scheduler must be async or sync, not '" + std::string(*value) + "'");
      }
    } else if (name == "--deadline_ms") {
      std::int64_t ms = 0;
      const std::string text(*value);
      std::size_t used = 0;
      try {
        ms = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || ms < 1 || ms > 60000) {
        return bad("--deadline_ms must be an integer from 1 to 60000, not '" + text + "'");
      }
      flags.deadline_ms = ms;
    }
  }
  if (flags.plans.empty()) return bad("--plans is required");
  if (flags.registry.empty()) return bad("--registry is required");
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
  engine::RankerOptions options;
  options.default_deadline = std::chrono::milliseconds(flags.deadline_ms);
  options.scheduler = flags.scheduler;
  engine::Ranker ranker(std::move(store), endpoints, options);
  std::string line;
  std::string error_body;
  while (std::getline(std::cin, line)) {
    std::string body;
    try {
      engine::Ranker::Answer answer = co_await ranker.Rank(line);
      body = std::move(answer.body);
    } catch (const std::exception& e) {
      body.clear();
      engine::WriteRankError(body, "", {std::string(engine::rank_errors::kInternal), e.what()});
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
