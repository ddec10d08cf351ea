#include "rankd/bench_report/eventloop_flags.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace rankd::bench_report {
namespace {

[[noreturn]] void FlagError(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
  std::exit(2);
}

// The flags that take a value; --bench_json and --bench_eventloop are booleans.
constexpr std::string_view kValueFlags[] = {"--bench_eventloop_mode", "--bench_n",
                                            "--bench_producers",      "--bench_sleep_ms",
                                            "--bench_tasks",          "--bench_warmup"};

// "posts|timers|all": the modes a program has, and `all`.
std::string ModeList(std::span<const std::string_view> modes) {
  std::string list;
  for (auto m : modes) (list += m) += '|';
  return list += "all";
}

void PrintUsage(const char* prog, std::span<const std::string_view> modes) {
  std::printf(
      "usage: %s [flags]\n"
      "  --bench_eventloop_mode %s   (default all)\n"
      "  --bench_n N           operations; 0 = mode default (posts 1000000, timers 10000)\n"
      "  --bench_producers N   producer threads for posts (default 1)\n"
      "  --bench_sleep_ms N    timer/sleep ms (default: timers 0, coro_timers and\n"
      "                        sleep_vs_pool 1)\n"
      "  --bench_tasks N       concurrent tasks for sleep_vs_pool (default 1000)\n"
      "  --bench_warmup N      unmeasured runs of each mode before the measured one (default 1)\n"
      "  --bench_json          print JSON instead of text\n"
      "Flags take `--flag value` or `--flag=value`.\n",
      prog, ModeList(modes).c_str());
}

std::int64_t ParseInt(const char* prog, std::string_view flag, std::string_view v,
                      std::int64_t min_value) {
  std::int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < min_value) {
    FlagError(prog, std::string(flag) + ": expected an integer >= " + std::to_string(min_value) +
                        ", got '" + std::string(v) + "'");
  }
  return out;
}

bool ParseBool(const char* prog, std::string_view flag, std::string_view v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  FlagError(prog, std::string(flag) + ": expected true or false, got '" + std::string(v) + "'");
}

}  // namespace

Flags ParseFlags(int argc, char** argv, std::span<const std::string_view> modes) {
  const char* prog = argc > 0 ? argv[0] : "peer";
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") {
      PrintUsage(prog, modes);
      std::exit(0);
    }
    if (!arg.starts_with("--")) FlagError(prog, "unexpected argument '" + std::string(arg) + "'");
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const bool is_bool = name == "--bench_json" || name == "--bench_eventloop";
    if (!is_bool &&
        std::find(std::begin(kValueFlags), std::end(kValueFlags), name) == std::end(kValueFlags)) {
      FlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
    if (!has_value && !is_bool) {
      if (i + 1 >= argc) FlagError(prog, std::string(name) + " needs a value");
      value = argv[++i];
      has_value = true;
    }
    if (name == "--bench_eventloop") {
      // The flag that selects this mode on rankd's original command line; a program that
      // parses these flags is in benchmark mode already, so it is only checked.
      if (has_value) ParseBool(prog, name, value);
    } else if (name == "--bench_json") {
      f.json = has_value ? ParseBool(prog, name, value) : true;
    } else if (name == "--bench_eventloop_mode") {
      f.mode = std::string(value);
      if (f.mode != "all" && std::find(modes.begin(), modes.end(), value) == modes.end()) {
        FlagError(prog, "mode '" + f.mode + "' is not one of " + ModeList(modes));
      }
    } else if (name == "--bench_n") {
      f.n = ParseInt(prog, name, value, 0);
    } else if (name == "--bench_producers") {
      f.producers = static_cast<int>(ParseInt(prog, name, value, 1));
    } else if (name == "--bench_sleep_ms") {
      f.sleep_ms = static_cast<int>(ParseInt(prog, name, value, 0));
    } else if (name == "--bench_tasks") {
      f.tasks = static_cast<int>(ParseInt(prog, name, value, 1));
    } else if (name == "--bench_warmup") {
      f.warmup = static_cast<int>(ParseInt(prog, name, value, 0));
    } else {
      FlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
  }
  return f;
}

}  // namespace rankd::bench_report
