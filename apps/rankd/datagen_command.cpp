#include "datagen_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "engine_flags.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/redis/batch.h"
#include "rankd/redis/cluster_client.h"
#include "rankd/redis/pool.h"
#include "rankd/redis/sinks.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"
#include "rankd/datagen/dataset.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s --dataset NAME --redis ADDRESS [--seed N] [--flush]\n"
    "Writes a synthetic dataset for the registry's key schemas (users, follows,\n"
    "recommendations, media, media features) to Redis, pipelined; the same dataset and seed\n"
    "write the same bytes. Every key it writes is replaced whole. docs/operations.md lists the\n"
    "datasets' sizes and shapes.\n"
    "  --dataset NAME     tiny, demo or bench\n"
    "  --redis ADDRESS    the Redis server to write to, HOST:PORT, or a Redis Cluster,\n"
    "                     cluster:HOST:PORT[,HOST:PORT...] (any of its nodes): each key goes\n"
    "                     to the master of its slot, pipelined per master (not while slots\n"
    "                     are migrating: a key's commands redirected one by one may reorder)\n"
    "  --seed N           the seed (default 1)\n"
    "  --flush            FLUSHDB first, on every master of a cluster (every other key of\n"
    "                     the database is removed)\n";

struct DatagenFlags {
  datagen::DatasetSpec dataset;
  std::string redis;  // as given: HOST:PORT or cluster:HOST:PORT,...
  engine::EndpointTarget target;
  std::uint64_t seed = 1;
  bool flush = false;
};

// "host:port" as the client's ConnectionOptions take it (the address was checked when parsed).
std::pair<std::string, std::uint16_t> HostAndPort(std::string_view address) {
  const std::size_t colon = address.rfind(':');
  return {std::string(address.substr(0, colon)),
          static_cast<std::uint16_t>(std::stoi(std::string(address.substr(colon + 1))))};
}

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

// Commands per pipelined batch (split over a cluster's masters), one batch in flight at a time.
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

// Throws naming the first command of `batch` Redis refused, then empties it.
void CheckAndClear(redis::Batch& batch) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch.error(i)) {
      throw std::runtime_error("a command on " + std::string(batch.key(i)) +
                               " was refused: " + *batch.error(i));
    }
  }
  batch.Clear();
}

// Where datagen writes: one server through one connection, or a Cluster's masters, each key to
// its slot's master. Thread affinity: the datagen loop's.
class Destination {
 public:
  virtual ~Destination() = default;
  // Connects (a cluster loads its slot map); throws redis::ConnectionError.
  virtual rt::Task<void> Start() = 0;
  // FLUSHDB on the server, or on every master.
  virtual rt::Task<void> FlushAll() = 0;
  // Every command of `batch`, pipelined (per master); errors in the batch.
  virtual rt::Task<void> Execute(redis::Batch& batch) = 0;
  // How many servers a batch spreads over (1, or the cluster's masters).
  virtual std::size_t masters() const = 0;
};

class ServerDestination final : public Destination {
 public:
  explicit ServerDestination(const std::string& address) {
    redis::PoolOptions options;
    std::tie(options.connection.host, options.connection.port) = HostAndPort(address);
    options.connections = 1;
    pool_ = std::make_unique<redis::Pool>(options);
  }
  rt::Task<void> Start() override {
    pool_->Start();
    co_await pool_->WaitUntilUp(std::chrono::seconds(5));
  }
  rt::Task<void> FlushAll() override {
    const redis::Reply reply = co_await pool_->Call("FLUSHDB");
    if (reply.is_error()) throw std::runtime_error("FLUSHDB was refused: " + reply.str);
  }
  rt::Task<void> Execute(redis::Batch& batch) override { co_await pool_->Execute(batch); }
  std::size_t masters() const override { return 1; }

 private:
  std::unique_ptr<redis::Pool> pool_;
};

class ClusterDestination final : public Destination {
 public:
  explicit ClusterDestination(const std::vector<std::string>& seeds) {
    redis::ClusterOptions options;
    for (const std::string& seed : seeds) options.seeds.push_back(HostAndPort(seed));
    options.refresh_interval = rt::Duration(0);  // reloaded when a redirect says so
    seed_host_ = options.seeds.front().first;
    client_ = std::make_unique<redis::ClusterClient>(std::move(options));
  }
  rt::Task<void> Start() override {
    co_await client_->Start();
    if (!client_->slot_map().covers_all_slots()) {
      throw std::runtime_error("the cluster serves " +
                               std::to_string(client_->slot_map().covered_slots()) +
                               " of the 16384 slots; every slot needs a master");
    }
  }
  rt::Task<void> FlushAll() override {
    const redis::SlotMap& map = client_->slot_map();
    std::vector<int> done;
    for (const redis::SlotMap::SlotRange& range : map.Ranges()) {
      if (range.primary < 0 || std::ranges::find(done, range.primary) != done.end()) continue;
      done.push_back(range.primary);
      const redis::ClusterNode& node = map.nodes()[static_cast<std::size_t>(range.primary)];
      const std::string host = node.host.empty() ? seed_host_ : node.host;
      const redis::Reply reply = co_await client_->PoolFor(host, node.port).Call("FLUSHDB");
      if (reply.is_error()) {
        throw std::runtime_error("FLUSHDB was refused by " + host + ":" +
                                 std::to_string(node.port) + ": " + reply.str);
      }
    }
  }
  rt::Task<void> Execute(redis::Batch& batch) override { co_await client_->Execute(batch); }
  std::size_t masters() const override {
    std::vector<int> primaries;
    for (const redis::SlotMap::SlotRange& range : client_->slot_map().Ranges()) {
      if (range.primary >= 0 && std::ranges::find(primaries, range.primary) == primaries.end()) {
        primaries.push_back(range.primary);
      }
    }
    return std::max<std::size_t>(1, primaries.size());
  }

 private:
  std::unique_ptr<redis::ClusterClient> client_;
  std::string seed_host_;  // for nodes announced without a host
};

struct Written {
  std::int64_t keys = 0;
  std::int64_t commands = 0;
  std::size_t masters = 1;
};

rt::Task<Written> Write(const DatagenFlags& flags) {
  std::unique_ptr<Destination> destination;
  if (flags.target.mode == engine::EndpointTarget::Mode::kCluster) {
    destination = std::make_unique<ClusterDestination>(flags.target.seeds);
  } else {
    destination = std::make_unique<ServerDestination>(flags.target.address);
  }
  co_await destination->Start();
  if (flags.flush) co_await destination->FlushAll();
  Written written;
  written.masters = destination->masters();
  redis::NullSink sink;  // the replies (counts, OK) are not needed, only their errors
  redis::Batch batch;
  const datagen::Dataset dataset(flags.dataset, flags.seed);
  Progress progress(dataset.keys());
  // A few users' keys per batch, one batch in flight: the generator runs while Redis works
  // through nothing, but ~1,000 commands keep it busy per round trip.
  for (std::int64_t user = 1; user <= dataset.users(); ++user) {
    dataset.Generate(user, [&](std::string_view key, std::span<const std::string> commands) {
      for (const std::string& command : commands) batch.AddEncoded(key, sink, command);
      written.commands += static_cast<std::int64_t>(commands.size());
      ++written.keys;
    });
    if (batch.size() >= kBatchCommands) {
      co_await destination->Execute(batch);
      CheckAndClear(batch);
      progress.Update(written.keys);
    }
  }
  if (!batch.empty()) {
    co_await destination->Execute(batch);
    CheckAndClear(batch);
  }
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
    std::vector<char*> rest = TakeSwitch(argc, argv, "--flush", flags.flush);
    static constexpr FlagSpec kDatagenFlags[] = {
        {"--dataset", FlagType::kString},
        {"--redis", FlagType::kString},
        {"--seed", FlagType::kInteger},
    };
    ForEachFlag(
        static_cast<int>(rest.size()), rest.data(), kDatagenFlags,
        [&](std::string_view name, std::string_view value) {
          if (name == "--dataset") {
            const auto spec = datagen::FindDataset(value);
            if (!spec) {
              throw FlagError("--dataset must be one of " + datagen::DatasetNames() + ", not '" +
                              std::string(value) + "'");
            }
            flags.dataset = *spec;
            have_dataset = true;
          } else if (name == "--redis") {
            std::string error;
            std::optional<engine::EndpointTarget> target =
                engine::ParseEndpointAddress(value, &error);
            if (!target) {
              throw FlagError("--redis must be HOST:PORT or cluster:HOST:PORT[,HOST:PORT...]: " +
                              error);
            }
            flags.target = std::move(*target);
            flags.redis = std::string(value);
          } else if (name == "--seed") {
            flags.seed = static_cast<std::uint64_t>(
                ParseIntFlag(name, value, 0, std::numeric_limits<std::int64_t>::max()));
          } else {
            return false;
          }
          return true;
        });
    if (!have_dataset) throw FlagError("--dataset is required (" + datagen::DatasetNames() + ")");
    if (flags.redis.empty()) throw FlagError("--redis is required");
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
    std::string message = e.what();
    if (flags.target.mode == engine::EndpointTarget::Mode::kSingle) {
      message = WithoutAddress(std::move(message), flags.redis);
    }
    std::fprintf(stderr, "%s: redis %s: %s\n", argv[0], flags.redis.c_str(), message.c_str());
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string masters = flags.target.mode == engine::EndpointTarget::Mode::kCluster
                                  ? " (" + std::to_string(written.masters) + " masters)"
                                  : std::string();
  std::printf(
      "datagen: dataset %s, seed %llu: %lld keys (%lld commands) written to %s%s in %.2f s, "
      "%.0f keys/s\n",
      flags.dataset.name.c_str(), static_cast<unsigned long long>(flags.seed),
      static_cast<long long>(written.keys), static_cast<long long>(written.commands),
      flags.redis.c_str(), masters.c_str(), seconds,
      seconds > 0 ? static_cast<double>(written.keys) / seconds : 0.0);
  return 0;
}

}  // namespace rankd::cli
