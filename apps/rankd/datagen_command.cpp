#include "datagen_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine_flags.h"
#include "rankd/redis/connection.h"
#include "rankd/redis/encoder.h"
#include "rankd/redis/sinks.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"
#include "rankd/service/dataset.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --dataset NAME --redis HOST:PORT [--seed N] [--flush]\n"
    "Writes a synthetic dataset for the registry's key schemas (users, follows,\n"
    "recommendations, media, media features) to Redis, pipelined; the same dataset and seed\n"
    "write the same bytes. Every key it writes is replaced whole. docs/operations.md lists the\n"
    "datasets' sizes and shapes.\n"
    "  --dataset NAME     tiny, demo or bench\n"
    "  --redis HOST:PORT  the Redis server to write to\n"
    "  --seed N           the seed (default 1)\n"
    "  --flush            FLUSHDB first (every other key of the database is removed)\n";

struct DatagenFlags {
  service::DatasetSpec dataset;
  std::string host;
  std::uint16_t port = 0;
  std::uint64_t seed = 1;
  bool flush = false;
};

// `message` without the address `address`: the Redis client's errors name it, some more than once
// (its own words and the connect error's), and datagen says it once, in front.
std::string WithoutAddress(std::string message, const std::string& address) {
  for (const std::string& form : {"redis " + address + ": ", "redis " + address + " ",
                                  " to " + address, address + ": ", address}) {
    for (std::size_t at = message.find(form); at != std::string::npos; at = message.find(form)) {
      message.erase(at, form.size());
    }
  }
  return message;
}

// Commands per pipelined batch, one batch in flight at a time.
constexpr std::size_t kBatchCommands = 1024;

class Progress {
 public:
  explicit Progress(std::int64_t total) : total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  void Update(std::int64_t done) {
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ &&
        now - last_ < (tty_ ? std::chrono::milliseconds(100) : std::chrono::seconds(1))) {
      return;
    }
    last_ = now;
    const int percent = total_ > 0 ? static_cast<int>(100 * done / total_) : 100;
    if (tty_) {
      const int filled = percent * 30 / 100;
      std::fprintf(stderr, "\r[%.*s%*s] %3d%% %lld/%lld keys", filled,
                   "##############################", 30 - filled, "", percent,
                   static_cast<long long>(done), static_cast<long long>(total_));
      if (done >= total_) std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "datagen: %lld/%lld keys (%d%%)\n", static_cast<long long>(done),
                   static_cast<long long>(total_), percent);
    }
  }

 private:
  std::int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point last_{};
};

// Sends the pipeline and throws naming the first command Redis refused.
rt::Task<void> Send(redis::Connection& connection, redis::Pipeline& pipeline) {
  co_await connection.Execute(pipeline);
  for (std::size_t i = 0; i < pipeline.size(); ++i) {
    if (pipeline.error(i)) {
      throw std::runtime_error("a command was refused: " + *pipeline.error(i));
    }
  }
  pipeline.Clear();
}

struct Written {
  std::int64_t keys = 0;
  std::int64_t commands = 0;
};

rt::Task<Written> Write(const DatagenFlags& flags) {
  redis::ConnectionOptions options;
  options.host = flags.host;
  options.port = flags.port;
  redis::Connection connection(options);
  connection.Start();
  co_await connection.WaitUntilUp(std::chrono::seconds(5));
  redis::NullSink sink;  // the replies (counts, OK) are not needed, only their errors
  redis::Pipeline pipeline;
  if (flags.flush) {
    pipeline.Add(sink, "FLUSHDB");
    co_await Send(connection, pipeline);
  }
  const service::Dataset dataset(flags.dataset, flags.seed);
  Progress progress(dataset.keys());
  Written written;
  // A few users' keys per pipeline, one pipeline in flight: the generator runs while Redis
  // works through nothing, but a batch of ~1,000 commands keeps it busy per round trip.
  for (std::int64_t user = 1; user <= dataset.users(); ++user) {
    dataset.Generate(user, [&](std::span<const std::string> commands) {
      for (const std::string& command : commands) pipeline.AddEncoded(sink, command);
      written.commands += static_cast<std::int64_t>(commands.size());
      ++written.keys;
    });
    if (pipeline.size() >= kBatchCommands) {
      co_await Send(connection, pipeline);
      progress.Update(written.keys);
    }
  }
  if (!pipeline.empty()) co_await Send(connection, pipeline);
  progress.Update(written.keys);
  co_return written;
}

}  // namespace

int RunDatagen(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    return 0;
  }
  DatagenFlags flags;
  bool have_dataset = false;
  try {
    // --flush takes no value: handled before the name=value loop.
    std::vector<char*> rest = {argv[0]};
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--flush") {
        flags.flush = true;
      } else {
        rest.push_back(argv[i]);
      }
    }
    static constexpr FlagSpec kDatagenFlags[] = {
        {"--dataset", FlagType::kString},
        {"--redis", FlagType::kString},
        {"--seed", FlagType::kInteger},
    };
    ForEachFlag(
        static_cast<int>(rest.size()), rest.data(), kDatagenFlags,
        [&](std::string_view name, std::string_view value) {
          if (name == "--dataset") {
            const auto spec = service::FindDataset(value);
            if (!spec) {
              throw FlagError("--dataset must be one of " + service::DatasetNames() + ", not '" +
                              std::string(value) + "'");
            }
            flags.dataset = *spec;
            have_dataset = true;
          } else if (name == "--redis") {
            const std::size_t colon = value.rfind(':');
            if (colon == std::string_view::npos || colon == 0) {
              throw FlagError("--redis must be HOST:PORT, not '" + std::string(value) + "'");
            }
            flags.host = value.substr(0, colon);
            flags.port = static_cast<std::uint16_t>(
                ParseIntFlag("--redis's port", value.substr(colon + 1), 1, 65535));
          } else if (name == "--seed") {
            flags.seed = static_cast<std::uint64_t>(
                ParseIntFlag(name, value, 0, std::numeric_limits<std::int64_t>::max()));
          } else {
            return false;
          }
          return true;
        });
    if (!have_dataset) throw FlagError("--dataset is required (" + service::DatasetNames() + ")");
    if (flags.host.empty()) throw FlagError("--redis is required");
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  Written written;
  try {
    rt::EventLoop loop;
    written = loop.RunUntilComplete(Write(flags));
  } catch (const std::exception& e) {
    const std::string address = flags.host + ":" + std::to_string(flags.port);
    std::fprintf(stderr, "%s: redis %s: %s\n", argv[0], address.c_str(),
                 WithoutAddress(e.what(), address).c_str());
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "datagen: dataset %s, seed %llu: %lld keys (%lld commands) written to %s:%u in %.2f s, "
      "%.0f keys/s\n",
      flags.dataset.name.c_str(), static_cast<unsigned long long>(flags.seed),
      static_cast<long long>(written.keys), static_cast<long long>(written.commands),
      flags.host.c_str(), static_cast<unsigned>(flags.port), seconds,
      seconds > 0 ? static_cast<double>(written.keys) / seconds : 0.0);
  return 0;
}

}  // namespace rankd::cli
