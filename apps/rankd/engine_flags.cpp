#include "engine_flags.h"

#include <charconv>
#include <string>

namespace rankd::cli {

const std::string_view kEngineFlagsHelp =
    "  --plans DIR        the plan store: DIR/index.json and its plans (rankc build --out DIR)\n"
    "  --registry DIR     the registry the plans were built against (registry/*.toml)\n"
    "  --env ENV          which of the registry's endpoint addresses to use: dev (default),\n"
    "                     test or prod\n"
    "  --endpoint SPEC    NAME=HOST:PORT or NAME=cluster:HOST:PORT[,HOST:PORT...]: overrides\n"
    "                     one endpoint's address (repeatable)\n"
    "  --scheduler S      async (default): nodes as soon as their inputs are done, commands\n"
    "                     pipelined; sync: one node and one Redis command at a time (baseline)\n"
    "  --deadline_ms N    the deadline of a request without deadline_ms (default 100)\n";

std::int64_t ParseIntFlag(std::string_view name, std::string_view value, std::int64_t min,
                          std::int64_t max) {
  std::int64_t n = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || n < min ||
      n > max) {
    throw FlagError(std::string(name) + " must be an integer from " + std::to_string(min) + " to " +
                    std::to_string(max) + ", not '" + std::string(value) + "'");
  }
  return n;
}

bool ApplyEngineFlag(EngineFlags& flags, std::string_view name, std::string_view value) {
  if (name == "--plans") {
    flags.plans = value;
  } else if (name == "--registry") {
    flags.registry = value;
  } else if (name == "--env") {
    const auto env = engine::ParseEnvironment(value);
    if (!env) throw FlagError("--env must be dev, test or prod, not '" + std::string(value) + "'");
    flags.env = *env;
  } else if (name == "--endpoint") {
    std::string error;
    auto parsed = engine::ParseEndpointOverride(value, &error);
    if (!parsed) throw FlagError("--endpoint " + std::string(value) + ": " + error);
    flags.endpoints.push_back(std::move(*parsed));
  } else if (name == "--scheduler") {
    if (value == "async") {
      flags.scheduler = engine::Scheduler::kAsync;
    } else if (value == "sync") {
      flags.scheduler = engine::Scheduler::kSync;
    } else {
      throw FlagError("--scheduler must be async or sync, not '" + std::string(value) + "'");
    }
  } else if (name == "--deadline_ms") {
    flags.deadline_ms = ParseIntFlag(name, value, 1, 60000);
  } else {
    return false;
  }
  return true;
}

void RequireEngineFlags(const EngineFlags& flags) {
  if (flags.plans.empty()) throw FlagError("--plans is required");
  if (flags.registry.empty()) throw FlagError("--registry is required");
}

void ForEachFlag(int argc, char** argv,
                 const std::function<bool(std::string_view, std::string_view)>& apply) {
  for (int i = 1; i < argc; ++i) {
    std::string_view name = argv[i];
    if (!name.starts_with("--")) throw FlagError("unexpected argument '" + std::string(name) + "'");
    std::string_view value;
    bool has_value = false;
    if (const std::size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw FlagError(std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (!apply(name, value)) throw FlagError("unknown flag '" + std::string(name) + "'");
  }
}

}  // namespace rankd::cli
