#include "assign_command.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_flags.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/engine/store/surfaces.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --plans DIR --registry DIR --surface NAME [--viewer ID]... [--json]\n"
    "Prints the variant of the surface each viewer is assigned, one line per viewer:\n"
    "`viewer_id variant plan`, or with --json a JSON object per line (viewer_id, surface,\n"
    "variant, plan, bucket). The viewers are the --viewer flags, or else stdin's lines, one id\n"
    "each (blank lines skipped). The assignment is the server's (docs/experiments.md).\n"
    "  --plans DIR      the plan store directory (index.json, surfaces.toml)\n"
    "  --registry DIR   the registry directory\n"
    "  --surface NAME   a surface of the store's surfaces.toml\n"
    "  --viewer ID      a viewer id, an integer from 0 to 9223372036854775807; repeatable\n"
    "  --json           JSON lines instead of text\n";

constexpr std::int64_t kMaxViewer = std::numeric_limits<std::int64_t>::max();

struct AssignFlags {
  std::string plans;
  std::string registry;
  std::string surface;
  std::vector<std::int64_t> viewers;
  bool json = false;
};

// The flags, or nullopt after printing what is wrong (exit 2).
std::optional<AssignFlags> ParseFlags(int argc, char** argv) {
  AssignFlags flags;
  try {
    std::vector<char*> rest = TakeSwitch(argc, argv, "--json", flags.json);
    static constexpr FlagSpec kAssignFlags[] = {
        {"--plans", FlagType::kString},
        {"--registry", FlagType::kString},
        {"--surface", FlagType::kString},
        {"--viewer", FlagType::kInteger, true},
    };
    ForEachFlag(static_cast<int>(rest.size()), rest.data(), kAssignFlags,
                [&flags](std::string_view name, std::string_view value) {
                  if (name == "--plans") {
                    flags.plans = value;
                  } else if (name == "--registry") {
                    flags.registry = value;
                  } else if (name == "--surface") {
                    flags.surface = value;
                  } else if (name == "--viewer") {
                    flags.viewers.push_back(ParseIntFlag(name, value, 0, kMaxViewer));
                  } else {
                    return false;
                  }
                  return true;
                });
    if (flags.plans.empty()) throw FlagError("--plans is required");
    if (flags.registry.empty()) throw FlagError("--registry is required");
    if (flags.surface.empty()) throw FlagError("--surface is required");
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return std::nullopt;
  }
  return flags;
}

void PrintAssignment(const engine::Surface& surface, std::int64_t viewer, bool json) {
  const engine::SurfaceVariant& variant = surface.Assign(viewer);
  std::string line;
  if (json) {
    engine::json::JsonWriter w(line);
    w.BeginObject().Key("viewer_id").Int(viewer).Member("surface", surface.name);
    w.Member("variant", variant.name).Member("plan", variant.plan);
    w.Key("bucket").Uint(engine::AssignmentBucket(surface.salt, viewer)).EndObject();
  } else {
    line = std::to_string(viewer) + " " + variant.name + " " + variant.plan;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

}  // namespace

int RunAssign(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    return 0;
  }
  const std::optional<AssignFlags> flags = ParseFlags(argc, argv);
  if (!flags) return 2;
  std::shared_ptr<const engine::PlanStore> store;
  try {
    store = engine::LoadPlanStore(flags->plans, flags->registry);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the plan store does not load: %s\n", argv[0], e.what());
    return 2;
  }
  const std::shared_ptr<const engine::Surface> surface = store->FindSurface(flags->surface);
  if (surface == nullptr) {
    std::string names;
    for (const auto& [name, s] : store->surfaces()) names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "%s: --surface: no surface '%s' in the plan store (%s) (try %s --help)\n",
                 argv[0], flags->surface.c_str(),
                 names.empty() ? "it has no surfaces.toml or no surfaces"
                               : ("its surfaces: " + names).c_str(),
                 argv[0]);
    return 2;
  }
  if (!flags->viewers.empty()) {
    for (const std::int64_t viewer : flags->viewers) PrintAssignment(*surface, viewer, flags->json);
    return 0;
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::size_t last = line.find_last_not_of(" \t\r");
    const std::string_view id(line.data() + first, last - first + 1);
    std::int64_t viewer = 0;
    try {
      viewer = ParseIntFlag("viewer id", id, 0, kMaxViewer);
    } catch (const FlagError& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "%s: stdin line %zu: %s\n", argv[0], number, e.what());
      return 1;
    }
    PrintAssignment(*surface, viewer, flags->json);
  }
  return 0;
}

}  // namespace rankd::cli
