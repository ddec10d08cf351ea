#include "replay_command.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_flags.h"
#include "rankd/engine/experiments/replay.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --captures FILE --plans DIR --registry DIR [--plan NAME] [--output NAME]\n"
    "       [--score KEY] [--k N] [--json] [--scheduler async|sync] [--deadline_ms N]\n"
    "Re-executes each captured request of FILE (written by rankd run --capture) against the\n"
    "plan store, answering its Redis commands from the capture (no Redis), and prints per\n"
    "request whether the response is the captured one byte for byte, and the ranking diff of\n"
    "the captured response (A) and the replay's (B). Ends with a summary line.\n"
    "  --captures FILE    the capture file (JSON lines)\n"
    "  --plans DIR        the plan store to replay against\n"
    "  --registry DIR     the registry directory\n"
    "  --plan NAME        replay every request against this plan (default: the plan that\n"
    "                     answered it)\n"
    "  --output NAME      the output the diff compares (default: the only one)\n"
    "  --score KEY        the score column the diff reads (default: none)\n"
    "  --k N              the depth of overlap@k (default 10)\n"
    "  --json             one JSON object per request instead of text, and no summary line\n"
    "Exit: 0 when every line was replayed (differences are results), 1 when a line is not a\n"
    "capture, 2 for bad flags, a capture file or plan store that does not open.\n";

struct ReplayFlags {
  std::string captures;
  std::string plans;
  std::string registry;
  engine::experiments::ReplayOptions replay;
  engine::RankerOptions ranker;
  bool json = false;
};

ReplayFlags ParseFlags(int argc, char** argv) {
  ReplayFlags flags;
  const std::vector<char*> rest = TakeSwitch(argc, argv, "--json", flags.json);
  static constexpr FlagSpec kReplayFlags[] = {
      {"--captures", FlagType::kString},     {"--plans", FlagType::kString},
      {"--registry", FlagType::kString},     {"--plan", FlagType::kString},
      {"--output", FlagType::kString},       {"--score", FlagType::kString},
      {"--k", FlagType::kInteger},           {"--scheduler", FlagType::kString},
      {"--deadline_ms", FlagType::kInteger},
  };
  ForEachFlag(
      static_cast<int>(rest.size()), const_cast<char**>(rest.data()), kReplayFlags,
      [&flags](std::string_view name, std::string_view value) {
        if (name == "--captures") {
          flags.captures = value;
        } else if (name == "--plans") {
          flags.plans = value;
        } else if (name == "--registry") {
          flags.registry = value;
        } else if (name == "--plan") {
          flags.replay.plan = value;
        } else if (name == "--output") {
          flags.replay.output = value;
        } else if (name == "--score") {
          flags.replay.score = value;
        } else if (name == "--k") {
          flags.replay.diff.k = static_cast<std::size_t>(
              ParseIntFlag(name, value, 1, std::numeric_limits<std::int32_t>::max()));
        } else if (name == "--scheduler") {
          if (value == "async") {
            flags.ranker.scheduler = engine::Scheduler::kAsync;
          } else if (value == "sync") {
            flags.ranker.scheduler = engine::Scheduler::kSync;
          } else {
            throw FlagError("--scheduler must be async or sync, not '" + std::string(value) + "'");
          }
        } else if (name == "--deadline_ms") {
          flags.ranker.default_deadline =
              std::chrono::milliseconds(ParseIntFlag(name, value, 1, 60'000));
        } else {
          return false;
        }
        return true;
      });
  if (flags.captures.empty()) throw FlagError("--captures is required");
  if (flags.plans.empty()) throw FlagError("--plans is required");
  if (flags.registry.empty()) throw FlagError("--registry is required");
  return flags;
}

void AppendTextResult(std::string& out, std::size_t line,
                      const engine::experiments::ReplayResult& r) {
  out += "line " + std::to_string(line) + " request " + r.request_id + ": " + r.plan_a;
  if (r.plan_b != r.plan_a) out += " -> " + r.plan_b;
  out += r.identical ? "  identical" : "  differs";
  if (r.missing_commands > 0) {
    out += "  (" + std::to_string(r.missing_commands) + " commands missing from the capture)";
  }
  out += '\n';
  if (r.identical) return;
  if (r.diff) {
    std::string diff;
    engine::experiments::WriteRankingDiffText(diff, *r.diff);
    for (std::size_t at = 0; at < diff.size();) {
      const std::size_t end = diff.find('\n', at);
      out += "  ";
      out.append(diff, at, end - at + 1);
      at = end + 1;
    }
  } else {
    out += "  no ranking diff: " + r.diff_error + "\n";
  }
}

void AppendJsonResult(std::string& out, std::size_t line,
                      const engine::experiments::ReplayResult& r) {
  engine::json::JsonWriter w(out);
  w.BeginObject().Key("line").Uint(line).Member("request_id", r.request_id);
  w.Member("plan_a", r.plan_a).Member("plan_b", r.plan_b).Member("identical", r.identical);
  w.Key("missing_commands").Uint(r.missing_commands).Key("diff");
  if (r.diff) {
    engine::experiments::WriteRankingDiffJson(w, *r.diff);
  } else {
    w.Null().Member("diff_error", r.diff_error);
  }
  w.EndObject();
  out += '\n';
}

rt::Task<int> ReplayAll(std::shared_ptr<const engine::CompiledPlanStore> store, std::ifstream& in,
                        const ReplayFlags& flags, const char* command) {
  engine::experiments::Replayer replayer(std::move(store), flags.ranker, flags.replay);
  std::string line;
  std::size_t number = 0, replayed = 0, identical = 0, missing = 0, bad = 0;
  std::string out;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    auto record = engine::experiments::ParseCaptureLine(line);
    if (!record) {
      std::fprintf(stderr, "%s: %s line %zu: not a capture: %s\n", command, flags.captures.c_str(),
                   number, record.error().c_str());
      ++bad;
      continue;
    }
    const engine::experiments::ReplayResult result = co_await replayer.Replay(*record);
    ++replayed;
    identical += result.identical ? 1 : 0;
    missing += result.missing_commands;
    out.clear();
    if (flags.json) {
      AppendJsonResult(out, number, result);
    } else {
      AppendTextResult(out, number, result);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (!flags.json) {
    std::printf(
        "replayed %zu requests: %zu identical, %zu differ; %zu commands missing from the "
        "capture\n",
        replayed, identical, replayed - identical, missing);
  }
  co_return bad > 0 ? 1 : 0;
}

}  // namespace

int RunReplay(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    return 0;
  }
  ReplayFlags flags;
  try {
    flags = ParseFlags(argc, argv);
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return 2;
  }
  std::ifstream in(flags.captures, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: --captures %s: cannot open\n", argv[0], flags.captures.c_str());
    return 2;
  }
  std::shared_ptr<const engine::CompiledPlanStore> store;
  try {
    store = std::make_shared<const engine::CompiledPlanStore>(
        engine::LoadPlanStore(flags.plans, flags.registry));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the plan store does not load: %s\n", argv[0], e.what());
    return 2;
  }
  if (!flags.replay.plan.empty() && !store->Find(flags.replay.plan)) {
    std::fprintf(stderr, "%s: --plan %s: no such plan in the plan store\n", argv[0],
                 flags.replay.plan.c_str());
    return 2;
  }
  rt::EventLoop loop;
  return loop.RunUntilComplete(ReplayAll(std::move(store), in, flags, argv[0]));
}

}  // namespace rankd::cli
