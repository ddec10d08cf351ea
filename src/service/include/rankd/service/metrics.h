// What `rankd serve` counts, and its Prometheus text exposition (GET /metrics; the families are
// listed in docs/operations.md, "Metrics").
//
// Each shard writes its own ShardMetrics under that shard's mutex: uncontended but while a
// scrape reads it, so a request pays one uncontended lock. A scrape locks each shard's in turn
// and sums them. Label values come from the plan store (plan, node, surface and variant names)
// and the registry
// (endpoint names), never from a request: a request naming an unknown plan is counted under
// plan="", so clients cannot grow the label sets.
//
// Thread affinity: a ShardMetrics is written by its shard's thread and read by the scraping
// thread, both under its mutex; StallCounts from any thread. Ownership: plain values.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rankd/redis/client_metrics.h"
#include "rankd/redis/reply_cache.h"
#include "rankd/service/admission.h"
#include "rankd/service/process_stats.h"

namespace rankd::service {

// Latency histogram buckets, seconds (upper bounds; +Inf is implied).
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// The bounds the per-node histograms are written with: a subset of kLatencyBuckets (so that the
// cumulative count at each is exact), 10 series per node instead of 17: a plan's node series are
// its nodes times that, per plan (docs/operations.md, "Metrics").
inline constexpr std::array<double, 7> kNodeBuckets = {0.0005, 0.0025, 0.01, 0.05, 0.25, 1, 5};

struct Histogram {
  std::array<std::uint64_t, kLatencyBuckets.size() + 1> counts{};  // per bucket; last: +Inf
  double sum = 0;

  void Observe(double seconds) noexcept;
  void Add(const Histogram& other) noexcept;
  std::uint64_t count() const noexcept;
};

// Buckets of a share in [0, 1] (a shadow's overlap@k and RBO), upper bounds.
inline constexpr std::array<double, 12> kShareBuckets = {0.1, 0.2, 0.3, 0.4,  0.5,  0.6,
                                                         0.7, 0.8, 0.9, 0.95, 0.99, 1};

struct ShareHistogram {
  std::array<std::uint64_t, kShareBuckets.size() + 1> counts{};  // per bucket; last: +Inf
  double sum = 0;

  void Observe(double share) noexcept;
  void Add(const ShareHistogram& other) noexcept;
};

// A surface's shadow runs that ranked (docs/experiments.md, "Shadow plans").
struct ShadowMetrics {
  ShareHistogram overlap_at_k;
  ShareHistogram rbo;
  std::uint64_t shared_nodes = 0;
  std::uint64_t saved_redis_commands = 0;
  std::uint64_t redis_commands = 0;

  void Add(const ShadowMetrics& other) noexcept;
};

struct EndpointMetrics {
  redis::ClientMetrics client;
  std::size_t in_flight = 0;
  bool ready = false;
  double queue_delay_seconds = 0;     // how long its oldest due command has waited
  std::size_t admission_limit = 0;    // requests needing it that admission lets run at once
  std::size_t admission_running = 0;  // requests needing it that run now
};

struct ShardMetrics {
  std::mutex mutex;
  // Everything below is guarded by `mutex`. The maps compare transparently, so a request finds
  // its entries by views (see FindOrAdd) and allocates only for a label set it is the first of.
  std::map<std::tuple<std::string, int, std::string>, std::uint64_t, std::less<>>
      requests;                                                   // plan, status, code
  std::map<std::string, Histogram, std::less<>> request_seconds;  // by plan
  std::map<std::tuple<std::string, std::string>, Histogram, std::less<>>
      node_seconds;  // plan, node
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t, std::less<>>
      node_degraded;                                                          // plan, node, reason
  std::map<std::string, EndpointMetrics, std::less<>> redis;                  // by endpoint
  std::map<std::string, redis::ReplyCacheStats, std::less<>> feature_caches;  // by key schema
  std::size_t in_flight = 0;
  std::size_t waiting = 0;                         // requests waiting for admission
  std::uint64_t waited = 0;                        // requests that waited for admission
  std::array<std::uint64_t, kShedReasons> shed{};  // requests refused by admission, by reason
  double loop_lag_seconds = 0;                     // how late the shard's last lag probe woke
  // By plan: when a request last named it (rt::MonotonicNanos). Not exposed; a reload reads it
  // to tell the plans in use (RankService::kRecentlyRequested).
  std::map<std::string, std::int64_t, std::less<>> last_requested_ns;
  std::map<std::string, std::uint64_t, std::less<>> empty_results;      // by plan
  std::map<std::string, std::uint64_t, std::less<>> unparsable_values;  // by key schema
  std::map<std::tuple<std::string, std::string>, std::uint64_t, std::less<>>
      surface_requests;  // surface, variant
  std::map<std::tuple<std::string, std::string>, std::uint64_t, std::less<>>
      shadow_requests;                                        // surface, result
  std::map<std::string, ShadowMetrics, std::less<>> shadows;  // by surface
};

// The entry of `map` under `key` (a view of the map's string key, or a tuple of views of its
// tuple key), added (its key made of strings) when missing.
template <class Map, class ViewKey>
typename Map::mapped_type& FindOrAdd(Map& map, const ViewKey& key) {
  auto it = map.find(key);
  if (it == map.end()) {
    if constexpr (std::is_convertible_v<ViewKey, std::string_view>) {
      it = map.emplace(typename Map::key_type(key), typename Map::mapped_type{}).first;
    } else {
      it = map.emplace(std::make_from_tuple<typename Map::key_type>(key),
                       typename Map::mapped_type{})
               .first;
    }
  }
  return it->second;
}

// Stalled turns per shard, counted by the event loops' stall reports (the watchdog thread).
class StallCounts {
 public:
  static constexpr std::size_t kMaxShards = 256;
  StallCounts() : counts_(kMaxShards) {}
  // Counts a report of the loop named "<prefix>-<index>" (a ShardSet's naming); others are
  // ignored.
  void Record(std::string_view loop_name) noexcept;
  std::uint64_t count(std::size_t shard) const noexcept {
    return counts_[shard].load(std::memory_order_relaxed);
  }
  std::size_t size() const noexcept { return counts_.size(); }

 private:
  std::vector<std::atomic<std::uint64_t>> counts_;
};

// Answers the HTTP layer made itself (no route's handler answered: a request it could not parse,
// no route, a handler that threw), by status, counted by the service's ErrorResponder.
// Thread affinity: any thread (relaxed atomics). Ownership: plain values.
class StatusCounts {
 public:
  static constexpr int kFirst = 100;
  static constexpr int kLast = 599;
  StatusCounts() : counts_(kLast - kFirst + 1) {}
  // Counts one answer of `status`; a status outside kFirst..kLast is ignored.
  void Record(int status) noexcept;
  std::uint64_t count(int status) const noexcept;

 private:
  std::vector<std::atomic<std::uint64_t>> counts_;
};

// How the binary was built: rankd_build_info's labels (the app's build_info.h.in).
struct BuildInfo {
  std::string version;
  std::string commit;  // HEAD at configure time; empty when not built from a git checkout
  std::string build_type;
  std::string compiler;
};

// A plan of the loaded store: rankd_plan_info's labels.
struct PlanInfo {
  std::string name;
  std::string digest;
};

// A variant of a surface of the loaded store: a series of rankd_surface_requests_total.
struct SurfaceVariantInfo {
  std::string surface;
  std::string variant;
};

// What the exposition reads besides the shards.
struct ProcessMetrics {
  std::uint64_t reloads = 0;
  std::uint64_t reload_failures = 0;
  std::size_t cpu_pool_queued = 0;
  std::size_t cpu_pool_threads = 0;
  const StallCounts* stalls = nullptr;  // may be null
  const BuildInfo* build = nullptr;     // null: no rankd_build_info
  // The loaded store's plans, and its registry's hash key schemas (those whose values are
  // parsed): each has a series in the per-plan and per-schema counters, 0 until counted.
  std::vector<PlanInfo> plans;
  std::vector<std::string> hash_schemas;
  // The loaded store's surfaces' variants: each has a series, 0 until counted.
  std::vector<SurfaceVariantInfo> surface_variants;
  // The loaded store's surfaces with a shadow plan: each has a series, 0 until counted.
  std::vector<std::string> shadow_surfaces;
  const StatusCounts* http_errors = nullptr;  // null: not exposed
  // Lines of a file the server writes from a thread (LineFileWriter): written, and dropped (the
  // writer's queue was full, or a write failed); nullopt: the server keeps no such file.
  struct LineCounts {
    std::uint64_t written = 0;
    std::uint64_t dropped = 0;
  };
  std::optional<LineCounts> captures;    // the capture file
  std::optional<LineCounts> served_log;  // the served-rankings log
  std::optional<LineCounts> shadow_log;  // the shadow diff log
  // Connections answered 503 at the shard's connection limit (http::ServerStats), which the
  // server answers from a response made once, not through the ErrorResponder; nullopt: unknown.
  std::optional<std::uint64_t> connections_rejected;
  ProcessStats process;  // process_*: each figure left out when it could not be read
};

// The Prometheus text exposition (format 0.0.4) of `shards` summed (per shard where the label
// says so) and `process`.
std::string RenderMetrics(const std::vector<ShardMetrics*>& shards, const ProcessMetrics& process);

}  // namespace rankd::service
