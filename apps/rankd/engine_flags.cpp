#include "engine_flags.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "rankd/runtime/cpu_pool.h"

namespace rankd::cli {
namespace {

constexpr FlagSpec kEngineFlagList[] = {
    {"--plans", FlagType::kString},
    {"--registry", FlagType::kString},
    {"--env", FlagType::kString},
    {"--endpoint", FlagType::kString, true},
    {"--scheduler", FlagType::kString},
    {"--deadline_ms", FlagType::kInteger},
    {"--node_timeout_ms", FlagType::kInteger},
    {"--cpu_threads", FlagType::kInteger},
};

}  // namespace

const std::span<const FlagSpec> kEngineFlagSpecs = kEngineFlagList;

std::string_view FlagTypeText(FlagType type) noexcept {
  switch (type) {
    case FlagType::kString:
      return "a string";
    case FlagType::kInteger:
      return "an integer";
    case FlagType::kNumber:
      return "a number";
  }
  return "a value";
}

const std::string_view kEngineFlagsHelp =
    "  --plans DIR        the plan store: DIR/index.json and its plans (rankc build --out DIR)\n"
    "  --registry DIR     the registry the plans were built against (registry/*.toml)\n"
    "  --env ENV          which of the registry's endpoint addresses to use: dev (default),\n"
    "                     test or prod\n"
    "  --endpoint SPEC    NAME=HOST:PORT or NAME=cluster:HOST:PORT[,HOST:PORT...]: overrides\n"
    "                     one endpoint's address (repeatable)\n"
    "  --scheduler S      async (default): nodes as soon as their inputs are done, commands\n"
    "                     pipelined; sync: one node and one Redis command at a time (baseline)\n"
    "  --deadline_ms N    the deadline of a request without deadline_ms (default 100)\n"
    "  --node_timeout_ms N\n"
    "                     the timeout of a plan node without timeout_ms, from when its inputs\n"
    "                     finished (default: none; the request's deadline bounds it)\n"
    "  --cpu_threads N    the CPU pool's threads, for heavy plan steps (default: one per core)\n";

std::vector<char*> TakeSwitch(int argc, char** argv, std::string_view name, bool& seen) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (name == argv[i]) {
      seen = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  return rest;
}

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

std::string ReadNamedFile(std::string_view what, const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    throw FlagError(std::string(what) + " " + path + ": cannot open (" +
                    (error != 0 ? std::string(std::strerror(error)) : "unknown error") + ")");
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    const int error = errno;
    throw FlagError(std::string(what) + " " + path + ": cannot read (" +
                    (error != 0 ? std::string(std::strerror(error)) : "unknown error") + ")");
  }
  return text;
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
  } else if (name == "--node_timeout_ms") {
    flags.node_timeout_ms = ParseIntFlag(name, value, 1, 60000);
  } else if (name == "--cpu_threads") {
    flags.cpu_threads = static_cast<std::size_t>(ParseIntFlag(name, value, 1, 1024));
  } else {
    return false;
  }
  return true;
}

void RequireEngineFlags(const EngineFlags& flags) {
  if (flags.plans.empty()) throw FlagError("--plans is required");
  if (flags.registry.empty()) throw FlagError("--registry is required");
}

void ApplyCpuThreads(const EngineFlags& flags) {
  try {
    rt::CpuPool::SetDefaultThreads(flags.cpu_threads);
  } catch (const std::logic_error& e) {
    throw FlagError(std::string("--cpu_threads: ") + e.what());
  }
}

engine::RankerOptions RankerOptionsOf(const EngineFlags& flags) {
  engine::RankerOptions options;
  options.default_deadline = std::chrono::milliseconds(flags.deadline_ms);
  options.scheduler = flags.scheduler;
  if (flags.node_timeout_ms) {
    options.default_node_timeout = std::chrono::milliseconds(*flags.node_timeout_ms);
  }
  return options;
}

const FlagSpec* FindFlag(std::span<const FlagSpec> specs, std::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

void ForEachFlag(int argc, char** argv, std::span<const FlagSpec> specs,
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
    // Known before its value is looked for: `--bogus` alone is unknown, not missing a value.
    if (FindFlag(specs, name) == nullptr) {
      throw FlagError("unknown flag '" + std::string(name) + "'");
    }
    if (!has_value) {
      if (i + 1 >= argc) throw FlagError(std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (!apply(name, value)) throw FlagError("unknown flag '" + std::string(name) + "'");
  }
}

}  // namespace rankd::cli
