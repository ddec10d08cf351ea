#include "serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "build_info.h"
#include "config_file.h"
#include "engine_flags.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/http/server.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/shards.h"
#include "rankd/service/event_log.h"
#include "rankd/service/metrics.h"
#include "rankd/service/plan_source.h"
#include "rankd/service/rank_service.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --plans DIR --registry DIR [--env dev|test|prod] [--endpoint NAME=HOST:PORT]...\n"
    "       [--shards N] [--host ADDR] [--port N] [--config FILE] [flags below]\n"
    "Serves ranking over HTTP (docs/operations.md): POST /rank, GET /plans, GET /plans/NAME,\n"
    "GET /healthz, GET /readyz and the studio page at /studio. Logs one JSON line per event on\n"
    "stderr. SIGHUP reloads the plan store; SIGTERM or SIGINT drains (requests in flight are\n"
    "answered) and exits 0.\n";

constexpr std::string_view kServeFlagsHelp =
    "  --shards N         event loops, each with its own Redis clients (default: one per core)\n"
    "  --host ADDR        the address to listen on (default 127.0.0.1; :: listens on\n"
    "                     IPv6 and IPv4)\n"
    "  --port N           the port (default 8080; 0 picks a free one)\n"
    "  --max_in_flight N  requests ranking at once per shard; beyond, they wait (default 256)\n"
    "  --max_waiting N    requests waiting for room at once per shard; beyond: 503 overloaded\n"
    "                     (default 256; 0: none waits)\n"
    "  --log_sample F     the share of successful requests logged, 0 to 1 (default 1; errors\n"
    "                     are always logged, refusals of admission counted instead)\n"
    "  --drain_grace_ms N how long a drain lets requests in flight finish (default 5000)\n"
    "  --io_backend B     epoll (default) or io_uring\n"
    "  --feature_cache_scope S  process (default: the shards share each schema's feature\n"
    "                     cache entries) or shard (each keeps its own; docs/operations.md)\n"
    "  --capture_file F   append captured requests to F for rankd replay: those asking\n"
    "                     (\"capture\": true) and a --capture_sample share of the others\n"
    "  --capture_sample F the share of requests captured besides those asking, 0 to 1\n"
    "                     (default 0; needs --capture_file)\n"
    "  --served_log F     append a record of what was served to F (docs/experiments.md,\n"
    "                     \"Served-rankings log\"), for a --served_log_sample share\n"
    "  --served_log_sample F  the share of ranked requests logged, 0 to 1 (default 1)\n"
    "  --served_log_max_mb N  rotate the log at N MiB (default 1024; 0: never)\n"
    "  --served_log_keep N    rotated logs kept, F.1 to F.N (default 5)\n"
    "  --shadow_log F     append each shadow run's ranking diff to F (docs/experiments.md,\n"
    "                     \"Shadow plans\"), for a --shadow_log_sample share\n"
    "  --shadow_log_sample F  the share of shadow runs logged, 0 to 1 (default 1)\n"
    "  --studio WHO       who may open the studio at /studio (docs/studio.md): loopback\n"
    "                     (default: peers on this machine), any, or off\n"
    "  --config FILE      a TOML file whose keys are these flags without dashes\n"
    "                     (port = 8080, endpoint = [\"graph=127.0.0.1:6379\"]); flags win\n";

constexpr FlagSpec kServeFlagList[] = {
    {"--shards", FlagType::kInteger},
    {"--host", FlagType::kString},
    {"--port", FlagType::kInteger},
    {"--max_in_flight", FlagType::kInteger},
    {"--max_waiting", FlagType::kInteger},
    {"--log_sample", FlagType::kNumber},
    {"--drain_grace_ms", FlagType::kInteger},
    {"--io_backend", FlagType::kString},
    {"--feature_cache_scope", FlagType::kString},
    {"--capture_file", FlagType::kString},
    {"--capture_sample", FlagType::kNumber},
    {"--served_log", FlagType::kString},
    {"--served_log_sample", FlagType::kNumber},
    {"--served_log_max_mb", FlagType::kInteger},
    {"--served_log_keep", FlagType::kInteger},
    {"--shadow_log", FlagType::kString},
    {"--shadow_log_sample", FlagType::kNumber},
    {"--studio", FlagType::kString},
};

// The flags a config file may set: the engine's and serve's own.
std::vector<FlagSpec> ConfigFlagSpecs() {
  std::vector<FlagSpec> specs(kEngineFlagSpecs.begin(), kEngineFlagSpecs.end());
  specs.insert(specs.end(), std::begin(kServeFlagList), std::end(kServeFlagList));
  return specs;
}

// The flags of the command line: those and --config.
std::vector<FlagSpec> CommandLineFlagSpecs() {
  std::vector<FlagSpec> specs = ConfigFlagSpecs();
  specs.push_back({"--config", FlagType::kString});
  return specs;
}

struct ServeFlags {
  EngineFlags engine;
  std::size_t shards = 0;
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  std::size_t max_in_flight = 256;
  std::size_t max_waiting = 256;
  double log_sample = 1.0;
  std::int64_t drain_grace_ms = 5000;
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  bool shared_feature_caches = true;  // --feature_cache_scope process (shard: false)
  std::string capture_file;            // empty: no captures
  double capture_sample = 0;
  std::string served_log;  // empty: no served-rankings log
  double served_log_sample = 1;
  std::int64_t served_log_max_mb = 1024;
  std::int64_t served_log_keep = 5;
  std::string shadow_log;  // empty: no shadow diff log
  double shadow_log_sample = 1;
  service::StudioAccess studio = service::StudioAccess::kLoopback;
};

double ParseShare(std::string_view name, std::string_view value) {
  double share = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), share);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() ||
      !(share >= 0 && share <= 1)) {
    throw FlagError(std::string(name) + " must be a number from 0 to 1, not '" +
                    std::string(value) + "'");
  }
  return share;
}

bool ApplyServeFlag(ServeFlags& flags, std::string_view name, std::string_view value) {
  if (ApplyEngineFlag(flags.engine, name, value)) return true;
  if (name == "--shards") {
    flags.shards = static_cast<std::size_t>(ParseIntFlag(name, value, 1, 256));
  } else if (name == "--host") {
    if (value.empty()) throw FlagError("--host must not be empty");
    flags.host = value;
  } else if (name == "--port") {
    flags.port = static_cast<std::uint16_t>(ParseIntFlag(name, value, 0, 65535));
  } else if (name == "--max_in_flight") {
    flags.max_in_flight = static_cast<std::size_t>(ParseIntFlag(name, value, 1, 1'000'000));
  } else if (name == "--max_waiting") {
    flags.max_waiting = static_cast<std::size_t>(ParseIntFlag(name, value, 0, 1'000'000));
  } else if (name == "--log_sample") {
    flags.log_sample = ParseShare(name, value);
  } else if (name == "--capture_file") {
    if (value.empty()) throw FlagError("--capture_file must not be empty");
    flags.capture_file = value;
  } else if (name == "--capture_sample") {
    flags.capture_sample = ParseShare(name, value);
  } else if (name == "--served_log") {
    if (value.empty()) throw FlagError("--served_log must not be empty");
    flags.served_log = value;
  } else if (name == "--served_log_sample") {
    flags.served_log_sample = ParseShare(name, value);
  } else if (name == "--served_log_max_mb") {
    flags.served_log_max_mb = ParseIntFlag(name, value, 0, 1'000'000);
  } else if (name == "--served_log_keep") {
    flags.served_log_keep = ParseIntFlag(name, value, 1, 1000);
  } else if (name == "--shadow_log") {
    if (value.empty()) throw FlagError("--shadow_log must not be empty");
    flags.shadow_log = value;
  } else if (name == "--shadow_log_sample") {
    flags.shadow_log_sample = ParseShare(name, value);
  } else if (name == "--studio") {
    if (value == "loopback") {
      flags.studio = service::StudioAccess::kLoopback;
    } else if (value == "any") {
      flags.studio = service::StudioAccess::kAny;
    } else if (value == "off") {
      flags.studio = service::StudioAccess::kOff;
    } else {
      throw FlagError("--studio must be loopback, any or off, not '" + std::string(value) + "'");
    }
  } else if (name == "--drain_grace_ms") {
    flags.drain_grace_ms = ParseIntFlag(name, value, 0, 600'000);
  } else if (name == "--io_backend") {
    if (value == "epoll") {
      flags.backend = rt::IoBackend::kEpoll;
    } else if (value == "io_uring") {
      flags.backend = rt::IoBackend::kIoUring;
    } else {
      throw FlagError("--io_backend must be epoll or io_uring, not '" + std::string(value) + "'");
    }
  } else if (name == "--feature_cache_scope") {
    if (value != "shard" && value != "process") {
      throw FlagError("--feature_cache_scope must be shard or process, not '" + std::string(value) +
                      "'");
    }
    flags.shared_feature_caches = value == "process";
  } else {
    return false;
  }
  return true;
}

// The flags: the config file's (if --config names one) then the command line's, or nullopt
// after printing what is wrong (exit 2).
std::optional<ServeFlags> ParseFlags(int argc, char** argv) {
  ServeFlags flags;
  try {
    const std::vector<FlagSpec> command_line = CommandLineFlagSpecs();
    std::string config;
    ForEachFlag(argc, argv, command_line, [&config](std::string_view name, std::string_view value) {
      if (name == "--config") config = value;
      return true;  // every value is checked in the second pass
    });
    if (!config.empty()) {
      ForEachConfigSetting(config, ConfigFlagSpecs(),
                           [&flags](std::string_view name, std::string_view value) {
                             return ApplyServeFlag(flags, name, value);
                           });
    }
    ForEachFlag(argc, argv, command_line, [&flags](std::string_view name, std::string_view value) {
      return name == "--config" || ApplyServeFlag(flags, name, value);
    });
    RequireEngineFlags(flags.engine);
    if (flags.capture_sample > 0 && flags.capture_file.empty()) {
      throw FlagError("--capture_sample needs --capture_file");
    }
    if (flags.served_log.empty() &&
        (flags.served_log_sample != 1 || flags.served_log_max_mb != 1024 ||
         flags.served_log_keep != 5)) {
      throw FlagError(
          "--served_log_sample, --served_log_max_mb and --served_log_keep need "
          "--served_log");
    }
    if (flags.shadow_log.empty() && flags.shadow_log_sample != 1)
      throw FlagError("--shadow_log_sample needs --shadow_log");
    ApplyCpuThreads(flags.engine);
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return std::nullopt;
  }
  return flags;
}

// The "loaded" line's members: the store, its registry, its plans and the endpoints.
void WriteStartFields(engine::json::JsonWriter& w, const service::LoadedStore& loaded,
                      const ServeFlags& flags) {
  w.Member("plans_dir", flags.engine.plans);
  w.Member("registry_digest", loaded.store->store().registry().digest());
  w.Key("plans").BeginArray();
  for (const auto& [name, plan] : loaded.store->store().plans()) w.String(name);
  w.EndArray().Key("endpoints").BeginObject();
  for (const auto& [name, target] : loaded.endpoints) {
    std::string where = target.address;
    if (target.mode == engine::EndpointTarget::Mode::kCluster) {
      where = "cluster:";
      for (std::size_t i = 0; i < target.seeds.size(); ++i)
        where += (i ? "," : "") + target.seeds[i];
    }
    w.Member(name, where);
  }
  w.EndObject();
}

}  // namespace

int RunServe(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    std::fputs(kEngineFlagsHelp.data(), stdout);
    std::fputs(kServeFlagsHelp.data(), stdout);
    return 0;
  }
  const std::optional<ServeFlags> flags = ParseFlags(argc, argv);
  if (!flags) return 2;

  service::ServiceOptions options;
  options.source = {flags->engine.plans, flags->engine.registry, flags->engine.env,
                    flags->engine.endpoints};
  options.ranker = RankerOptionsOf(flags->engine);
  options.admission.max_in_flight = flags->max_in_flight;
  options.admission.max_waiting = flags->max_waiting;
  options.shared_feature_caches = flags->shared_feature_caches;
  service::LoadedStore loaded;
  try {
    loaded = service::LoadFromSource(options.source);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the plan store does not load: %s\n", argv[0], e.what());
    return 2;
  }
  // The capture file opens before the server listens: a path it cannot write is a bad flag.
  std::unique_ptr<service::LineFileWriter> captures;
  if (!flags->capture_file.empty()) {
    try {
      captures = std::make_unique<service::LineFileWriter>(flags->capture_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: --capture_file %s\n", argv[0], e.what());
      return 2;
    }
    options.captures = captures.get();
    options.capture_sample = flags->capture_sample;
  }
  std::unique_ptr<service::LineFileWriter> served_log;
  if (!flags->served_log.empty()) {
    try {
      served_log = std::make_unique<service::LineFileWriter>(
          flags->served_log,
          service::LineFileWriter::Options{
              .rotate_bytes = static_cast<std::uint64_t>(flags->served_log_max_mb) << 20,
              .keep = static_cast<int>(flags->served_log_keep)});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: --served_log %s\n", argv[0], e.what());
      return 2;
    }
    options.served_log = served_log.get();
    options.served_log_sample = flags->served_log_sample;
  }
  // Rotated as the served-rankings log is by default (1 GiB, 5 kept).
  std::unique_ptr<service::LineFileWriter> shadow_log;
  if (!flags->shadow_log.empty()) {
    try {
      shadow_log = std::make_unique<service::LineFileWriter>(
          flags->shadow_log,
          service::LineFileWriter::Options{.rotate_bytes = std::uint64_t{1024} << 20, .keep = 5});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: --shadow_log %s\n", argv[0], e.what());
      return 2;
    }
    options.shadow_log = shadow_log.get();
    options.shadow_log_sample = flags->shadow_log_sample;
  }
  options.studio = flags->studio;
  service::EventLog log(flags->log_sample);
  // The runtime's and the HTTP server's diagnostics (stalls, descriptor budget, failed stop
  // hooks) as log lines too, so that stderr is JSON throughout.
  rt::SetLogSink([&log](std::string_view line) {
    log.Event("diagnostic", [&](engine::json::JsonWriter& w) { w.Member("message", line); });
  });
  struct RestoreLogSink {
    ~RestoreLogSink() { rt::SetLogSink({}); }
  } restore_log_sink;
  log.Event("loaded", [&](engine::json::JsonWriter& w) { WriteStartFields(w, loaded, *flags); });

  // Shard threads inherit the mask: only sigwait below takes these signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rt::ShardOptions shard_options;
  shard_options.shards = flags->shards;
  shard_options.loop.backend = flags->backend;
  // Stall reports (from the watchdog thread): counted for /metrics and logged.
  service::StallCounts stalls;
  shard_options.loop.on_stall = [&stalls, &log](std::string_view loop, rt::Duration stalled) {
    stalls.Record(loop);
    // Milliseconds to the tenth, in fixed notation.
    char ms[32];
    const int length = std::snprintf(ms, sizeof ms, "%.1f",
                                     std::chrono::duration<double, std::milli>(stalled).count());
    log.Event("loop_stalled", [&](engine::json::JsonWriter& w) {
      w.Member("loop", loop)
          .Key("ms")
          .Raw(std::string_view(ms, std::min(sizeof ms - 1, static_cast<std::size_t>(length))));
    });
  };
  rt::ShardSet shards(shard_options);
  http::ServerOptions server_options;
  server_options.host = flags->host;
  server_options.port = flags->port;
  server_options.drain_grace = std::chrono::milliseconds(flags->drain_grace_ms);
  options.stalls = &stalls;
  options.build =
      service::BuildInfo{std::string(build_info::kVersion), std::string(build_info::kGitCommit),
                         std::string(build_info::kBuildType), std::string(build_info::kCompiler)};
  // The service before the server: its per-shard state outlives the server's drain.
  service::RankService service(shards, std::move(options), std::move(loaded), log);
  std::unique_ptr<http::Server> server;
  try {
    server = std::make_unique<http::Server>(shards, server_options, service.Routes());
    service.set_server(server.get());
    shards.Start();
  } catch (const http::PortInUseError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  log.Event("listening", [&](engine::json::JsonWriter& w) {
    w.Member("url", "http://" + flags->host + ":" + std::to_string(server->port()));
    w.Key("port").Uint(server->port()).Key("shards").Uint(shards.size());
    w.Key("cpu_threads").Uint(rt::CpuPool::Default().threads());
    w.Member("io_backend", rt::IoBackendName(server->backend()));
  });

  for (;;) {
    int sig = 0;
    // sigwait's only error is an invalid set (EINVAL); a failure drains as SIGTERM does.
    if (sigwait(&signals, &sig) != 0 || sig != SIGHUP) break;
    service.Reload();
  }
  log.Event("draining");
  server->Drain();
  server.reset();
  shards.Stop();
  log.Event("stopped");
  return 0;
}

}  // namespace rankd::cli
