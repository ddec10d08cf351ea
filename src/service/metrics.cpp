#include "rankd/service/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>
#include <stdexcept>
#include <system_error>

#include "rankd/service/http_errors.h"

namespace rankd::service {
namespace {

// A label value as the exposition format escapes it: backslash, double quote and newline.
void AppendLabelValue(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

// A float as the exposition format reads it: the fewest digits that read back as the same double
// (0.000142148, not 0.00014214800000000001), in plain decimal from 0.0001 to below 10^16 and in
// scientific notation outside (Python's repr does the same: le="0.0005", not le="5e-04"), and
// +Inf, -Inf and NaN spelled as Prometheus spells them.
void AppendNumber(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  const double magnitude = std::fabs(v);
  const std::chars_format format = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)
                                       ? std::chars_format::fixed
                                       : std::chars_format::scientific;
  char text[32];  // at most 17 significant digits, a sign, a point and 4 zeros or an exponent
  const auto [end, error] = std::to_chars(text, text + sizeof text, v, format);
  if (error != std::errc()) throw std::logic_error("to_chars failed on a finite double");
  out.append(text, static_cast<std::size_t>(end - text));
}

void AppendNumber(std::string& out, std::uint64_t v) { out += std::to_string(v); }

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

void AppendLabels(std::string& out, const Labels& labels, std::string_view le = {}) {
  if (labels.empty() && le.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += '=';
    AppendLabelValue(out, value);
  }
  if (!le.empty()) {
    if (!first) out += ',';
    out += "le=";
    AppendLabelValue(out, le);
  }
  out += '}';
}

template <class Number>
void Sample(std::string& out, std::string_view name, const Labels& labels, Number value) {
  out += name;
  AppendLabels(out, labels);
  out += ' ';
  AppendNumber(out, value);
  out += '\n';
}

constexpr bool IsLatencyBound(double bound) {
  return std::find(kLatencyBuckets.begin(), kLatencyBuckets.end(), bound) != kLatencyBuckets.end();
}
static_assert(std::all_of(kNodeBuckets.begin(), kNodeBuckets.end(), IsLatencyBound),
              "every node bucket bound is a latency bucket bound");

// A histogram's samples: `counts` per bucket of `bounds` and a last one for +Inf, written
// cumulatively at the bounds in `shown` (a subset of `bounds`) and +Inf, then _sum and _count.
void BucketSamples(std::string& out, std::string_view name, const Labels& labels,
                   std::span<const double> bounds, std::span<const std::uint64_t> counts,
                   double sum, std::span<const double> shown) {
  std::uint64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    std::string le = "+Inf";
    if (i < bounds.size()) {
      if (std::find(shown.begin(), shown.end(), bounds[i]) == shown.end()) continue;
      le.clear();
      AppendNumber(le, bounds[i]);
    }
    out += bucket;
    AppendLabels(out, labels, le);
    out += ' ';
    AppendNumber(out, cumulative);
    out += '\n';
  }
  Sample(out, std::string(name) + "_sum", labels, sum);
  Sample(out, std::string(name) + "_count", labels, cumulative);
}

// `h`'s samples with the buckets of `bounds` (a subset of kLatencyBuckets) and +Inf.
void HistogramSamples(std::string& out, std::string_view name, const Labels& labels,
                      const Histogram& h, std::span<const double> bounds = kLatencyBuckets) {
  BucketSamples(out, name, labels, kLatencyBuckets, h.counts, h.sum, bounds);
}

void ShareHistogramSamples(std::string& out, std::string_view name, const Labels& labels,
                           const ShareHistogram& h) {
  BucketSamples(out, name, labels, kShareBuckets, h.counts, h.sum, kShareBuckets);
}

// The shards' metrics summed, read under each shard's lock in turn.
struct Totals {
  std::map<std::tuple<std::string, int, std::string>, std::uint64_t> requests;
  std::map<std::string, Histogram, std::less<>> request_seconds;
  std::map<std::tuple<std::string, std::string>, Histogram> node_seconds;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> node_degraded;
  std::map<std::string, EndpointMetrics, std::less<>> redis;
  std::map<std::string, redis::ReplyCacheStats, std::less<>> feature_caches;
  std::vector<std::size_t> in_flight;
  std::vector<std::size_t> waiting;
  std::uint64_t waited = 0;
  std::array<std::uint64_t, kShedReasons> shed{};
  std::vector<double> loop_lag_seconds;
  std::map<std::string, std::uint64_t, std::less<>> empty_results;
  std::map<std::string, std::uint64_t, std::less<>> unparsable_values;
  std::map<std::tuple<std::string, std::string>, std::uint64_t, std::less<>> surface_requests;
  std::map<std::tuple<std::string, std::string>, std::uint64_t, std::less<>> shadow_requests;
  std::map<std::string, ShadowMetrics, std::less<>> shadows;
};

void AddClient(redis::ClientMetrics& into, const redis::ClientMetrics& m) {
  into.commands_sent += m.commands_sent;
  into.replies += m.replies;
  into.late_replies += m.late_replies;
  into.errors_server += m.errors_server;
  into.errors_connection += m.errors_connection;
  into.errors_protocol += m.errors_protocol;
  into.errors_deadline += m.errors_deadline;
  into.errors_cancelled += m.errors_cancelled;
  into.connects += m.connects;
  into.reconnects += m.reconnects;
  into.connect_failures += m.connect_failures;
  into.redirects_moved += m.redirects_moved;
  into.redirects_ask += m.redirects_ask;
  into.topology_refreshes += m.topology_refreshes;
  into.replica_fallbacks += m.replica_fallbacks;
  into.primary_fallbacks += m.primary_fallbacks;
}

Totals Sum(const std::vector<ShardMetrics*>& shards) {
  Totals t;
  for (ShardMetrics* shard : shards) {
    std::lock_guard lock(shard->mutex);
    for (const auto& [key, n] : shard->requests) t.requests[key] += n;
    for (const auto& [key, h] : shard->request_seconds) t.request_seconds[key].Add(h);
    for (const auto& [key, h] : shard->node_seconds) t.node_seconds[key].Add(h);
    for (const auto& [key, n] : shard->node_degraded) t.node_degraded[key] += n;
    for (const auto& [name, e] : shard->redis) {
      EndpointMetrics& into = t.redis[name];
      AddClient(into.client, e.client);
      into.in_flight += e.in_flight;
      into.ready = into.ready || e.ready;
      into.queue_delay_seconds = std::max(into.queue_delay_seconds, e.queue_delay_seconds);
      into.admission_limit += e.admission_limit;
      into.admission_running += e.admission_running;
    }
    for (const auto& [schema, c] : shard->feature_caches) t.feature_caches[schema].Add(c);
    t.in_flight.push_back(shard->in_flight);
    t.waiting.push_back(shard->waiting);
    t.waited += shard->waited;
    for (std::size_t r = 0; r < kShedReasons; ++r) t.shed[r] += shard->shed[r];
    t.loop_lag_seconds.push_back(shard->loop_lag_seconds);
    for (const auto& [plan, n] : shard->empty_results) t.empty_results[plan] += n;
    for (const auto& [schema, n] : shard->unparsable_values) t.unparsable_values[schema] += n;
    for (const auto& [key, n] : shard->surface_requests) t.surface_requests[key] += n;
    for (const auto& [key, n] : shard->shadow_requests) t.shadow_requests[key] += n;
    for (const auto& [surface, m] : shard->shadows) t.shadows[surface].Add(m);
  }
  return t;
}

// What a family's samples are written from: the shards' totals and the process's figures.
struct Scrape {
  Totals t;
  const ProcessMetrics& process;
};

// One metric family of the exposition: its name, type and help, whether the scrape exposes it
// (null: always), and how its samples are written (each under the family's name, or with a
// suffix of it for a histogram's series).
struct MetricFamily {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  bool (*exposed)(const Scrape& s);
  void (*samples)(std::string& out, std::string_view name, const Scrape& s);
};

// The series every scrape has, 0 until counted: those of the store's plans, hash key schemas,
// surfaces' variants and shadow surfaces.
void AddKnownSeries(Totals& t, const ProcessMetrics& process) {
  for (const SurfaceVariantInfo& v : process.surface_variants)
    FindOrAdd(t.surface_requests,
              std::tuple(std::string_view(v.surface), std::string_view(v.variant)));
  for (const std::string& surface : process.shadow_surfaces) {
    FindOrAdd(t.shadows, surface);
    FindOrAdd(t.shadow_requests, std::tuple(std::string_view(surface), std::string_view("ran")));
  }
  for (const PlanInfo& plan : process.plans) FindOrAdd(t.empty_results, plan.name);
  for (const std::string& schema : process.hash_schemas) FindOrAdd(t.unparsable_values, schema);
}

// A family of one sample per endpoint, `field` of its summed metrics.
template <auto Field>
void PerEndpoint(std::string& out, std::string_view name, const Scrape& s) {
  for (const auto& [endpoint, e] : s.t.redis) {
    Sample(out, name, {{"endpoint", endpoint}}, static_cast<std::uint64_t>(Field(e)));
  }
}

// A family of one sample per feature cache's schema, `Field` of its summed stats.
template <std::uint64_t redis::ReplyCacheStats::*Field>
void PerCache(std::string& out, std::string_view name, const Scrape& s) {
  for (const auto& [schema, c] : s.t.feature_caches) {
    Sample(out, name, {{"schema", schema}}, c.*Field);
  }
}

// A family of one sample per surface with shadow runs, `Field` of its summed figures.
template <std::uint64_t ShadowMetrics::*Field>
void PerShadow(std::string& out, std::string_view name, const Scrape& s) {
  for (const auto& [surface, m] : s.t.shadows) Sample(out, name, {{"surface", surface}}, m.*Field);
}

// One of Prometheus' standard process metrics, exposed when it could be read.
template <std::optional<double> ProcessStats::*Field>
constexpr MetricFamily ProcessFamily(std::string_view name, std::string_view type,
                                     std::string_view help) {
  return {name, type, help, [](const Scrape& s) { return (s.process.process.*Field).has_value(); },
          [](std::string& out, std::string_view family, const Scrape& s) {
            Sample(out, family, {}, *(s.process.process.*Field));
          }};
}

// The families, in the order of the exposition (docs/operations.md, "Metrics").
constexpr MetricFamily kFamilies[] = {
    {"rankd_build_info", "gauge",
     "1, labelled with how this rankd was built: version, commit (empty when not built from a git "
     "checkout), build type and compiler.",
     [](const Scrape& s) { return s.process.build != nullptr; },
     [](std::string& out, std::string_view name, const Scrape& s) {
       const BuildInfo& build = *s.process.build;
       Sample(out, name,
              {{"version", build.version},
               {"commit", build.commit},
               {"build_type", build.build_type},
               {"compiler", build.compiler}},
              std::uint64_t{1});
     }},
    {"rankd_plan_info", "gauge",
     "1 per plan of the loaded store, labelled with its name and digest.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const PlanInfo& plan : s.process.plans) {
         Sample(out, name, {{"plan", plan.name}, {"digest", plan.digest}}, std::uint64_t{1});
       }
     }},
    {"rankd_requests_total", "counter",
     "Ranking requests answered, by plan, HTTP status and error code (empty when it ranked).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [key, n] : s.t.requests) {
         const auto& [plan, status, code] = key;
         const std::string status_text = std::to_string(status);
         Sample(out, name, {{"plan", plan}, {"status", status_text}, {"code", code}}, n);
       }
     }},
    {"rankd_request_duration_seconds", "histogram",
     "Time from a ranking request's body to its response, by plan.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [plan, h] : s.t.request_seconds) {
         HistogramSamples(out, name, {{"plan", plan}}, h);
       }
     }},
    {"rankd_requests_in_flight", "gauge", "Ranking requests being answered, by shard.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (std::size_t i = 0; i < s.t.in_flight.size(); ++i) {
         const std::string shard = std::to_string(i);
         Sample(out, name, {{"shard", shard}}, static_cast<std::uint64_t>(s.t.in_flight[i]));
       }
     }},
    {"rankd_requests_waiting", "gauge",
     "Ranking requests waiting for admission (room on the shard), by shard.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (std::size_t i = 0; i < s.t.waiting.size(); ++i) {
         const std::string shard = std::to_string(i);
         Sample(out, name, {{"shard", shard}}, static_cast<std::uint64_t>(s.t.waiting[i]));
       }
     }},
    {"rankd_requests_waited_total", "counter",
     "Ranking requests that waited for admission, admitted or refused in the end.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       Sample(out, name, {}, s.t.waited);
     }},
    {"rankd_requests_shed_total", "counter",
     "Ranking requests refused by admission (503 overloaded), by what held them back: in_flight "
     "(the shard's --max_in_flight), endpoint_limit (a Redis endpoint the plan needs at its "
     "adaptive limit) or queue_full (--max_waiting requests waiting already).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (std::size_t r = 0; r < kShedReasons; ++r) {
         Sample(out, name, {{"reason", ShedReasonName(static_cast<ShedReason>(r))}}, s.t.shed[r]);
       }
     }},
    {"rankd_node_duration_seconds", "histogram",
     "Time from a node's start to its end, by plan and node.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [key, h] : s.t.node_seconds) {
         const auto& [plan, node] = key;
         HistogramSamples(out, name, {{"plan", plan}, {"node", node}}, h, kNodeBuckets);
       }
     }},
    {"rankd_node_degraded_total", "counter",
     "Nodes that degraded (on_error: skip), by plan, node and reason (timeout or error).", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [key, n] : s.t.node_degraded) {
         const auto& [plan, node, reason] = key;
         Sample(out, name, {{"plan", plan}, {"node", node}, {"reason", reason}}, n);
       }
     }},
    {"rankd_surface_requests_total", "counter",
     "Ranking requests naming a surface, by surface and the variant the viewer was assigned "
     "(whatever their answer).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [key, n] : s.t.surface_requests) {
         const auto& [surface, variant] = key;
         Sample(out, name, {{"surface", surface}, {"variant", variant}}, n);
       }
     }},
    {"rankd_shadow_requests_total", "counter",
     "Shadow plan runs of a surface's requests, by surface and result: ran, shed, invalid_param, "
     "failed, cancelled, undiffable.",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [key, n] : s.t.shadow_requests) {
         const auto& [surface, result] = key;
         Sample(out, name, {{"surface", surface}, {"result", result}}, n);
       }
     }},
    {"rankd_shadow_overlap_at_k", "histogram",
     "Of the shadow runs that ranked: the overlap at 10 of the primary's first output and the "
     "shadow's, by surface.",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [surface, m] : s.t.shadows)
         ShareHistogramSamples(out, name, {{"surface", surface}}, m.overlap_at_k);
     }},
    {"rankd_shadow_rbo", "histogram",
     "Of the shadow runs that ranked: the rank-biased overlap (p = 0.9) of the primary's first "
     "output and the shadow's, by surface.",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [surface, m] : s.t.shadows)
         ShareHistogramSamples(out, name, {{"surface", surface}}, m.rbo);
     }},
    {"rankd_shadow_shared_nodes_total", "counter",
     "Shadow plan nodes that took the primary's rows instead of running, by surface.", nullptr,
     PerShadow<&ShadowMetrics::shared_nodes>},
    {"rankd_shadow_saved_redis_commands_total", "counter",
     "Redis commands shadow runs did not send because their nodes took the primary's rows, by "
     "surface.",
     nullptr, PerShadow<&ShadowMetrics::saved_redis_commands>},
    {"rankd_shadow_redis_commands_total", "counter", "Redis commands shadow runs sent, by surface.",
     nullptr, PerShadow<&ShadowMetrics::redis_commands>},
    {"rankd_log_lines_total", "counter",
     "Lines of the files the server writes (captures, served, shadow), by result: written, or "
     "dropped (the writer's queue was full or a write failed).",
     [](const Scrape& s) {
       return s.process.captures || s.process.served_log || s.process.shadow_log;
     },
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [log, counts] :
            {std::pair{"captures", &s.process.captures}, std::pair{"served", &s.process.served_log},
             std::pair{"shadow", &s.process.shadow_log}}) {
         if (!*counts) continue;
         Sample(out, name, {{"log", log}, {"result", "written"}}, (*counts)->written);
         Sample(out, name, {{"log", log}, {"result", "dropped"}}, (*counts)->dropped);
       }
     }},
    {"rankd_plan_empty_results_total", "counter",
     "Ranked answers with no row in any output, by plan.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [plan, n] : s.t.empty_results) Sample(out, name, {{"plan", plan}}, n);
     }},
    {"rankd_unparsable_values_total", "counter",
     "Values read from Redis that the value rules turned into null, by key schema.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [schema, n] : s.t.unparsable_values) {
         Sample(out, name, {{"schema", schema}}, n);
       }
     }},
    {"rankd_redis_commands_total", "counter", "Redis commands sent, by endpoint.", nullptr,
     PerEndpoint<[](const EndpointMetrics& e) { return e.client.commands_sent; }>},
    {"rankd_redis_errors_total", "counter",
     "Redis commands that failed, by endpoint and kind: server (an error reply), connection, "
     "protocol, deadline, cancelled.",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [endpoint, e] : s.t.redis) {
         const std::pair<std::string_view, std::uint64_t> kinds[] = {
             {"server", e.client.errors_server},       {"connection", e.client.errors_connection},
             {"protocol", e.client.errors_protocol},   {"deadline", e.client.errors_deadline},
             {"cancelled", e.client.errors_cancelled},
         };
         for (const auto& [kind, n] : kinds) {
           Sample(out, name, {{"endpoint", endpoint}, {"kind", kind}}, n);
         }
       }
     }},
    {"rankd_redis_in_flight", "gauge",
     "Redis calls on the connections now (a node's batch counts as one), by endpoint.", nullptr,
     PerEndpoint<[](const EndpointMetrics& e) { return e.in_flight; }>},
    {"rankd_redis_queue_delay_seconds", "gauge",
     "How long the oldest command due on the endpoint has waited (the most of any shard, at its "
     "last request or probe); admission's limit shrinks while it stays over its target.",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [endpoint, e] : s.t.redis)
         Sample(out, name, {{"endpoint", endpoint}}, e.queue_delay_seconds);
     }},
    {"rankd_admission_limit", "gauge",
     "Requests needing the endpoint that admission lets run at once, summed over the shards; it "
     "adapts to the endpoint's queue delay.",
     nullptr, PerEndpoint<[](const EndpointMetrics& e) { return e.admission_limit; }>},
    {"rankd_admission_running", "gauge",
     "Requests needing the endpoint that run now, summed over the shards.", nullptr,
     PerEndpoint<[](const EndpointMetrics& e) { return e.admission_running; }>},
    {"rankd_redis_reconnects_total", "counter",
     "Redis connections made again after they were lost, by endpoint.", nullptr,
     PerEndpoint<[](const EndpointMetrics& e) { return e.client.reconnects; }>},
    {"rankd_redis_connect_failures_total", "counter",
     "Redis connection attempts that failed, by endpoint.", nullptr,
     PerEndpoint<[](const EndpointMetrics& e) { return e.client.connect_failures; }>},
    {"rankd_redis_cluster_fallbacks_total", "counter",
     "Cluster reads sent to another node after a failure, by endpoint and where they went: "
     "replica (their primary's connections were lost: a master down until its replica is "
     "promoted), primary (their replica's connection failed).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [endpoint, e] : s.t.redis) {
         Sample(out, name, {{"endpoint", endpoint}, {"to", "replica"}}, e.client.primary_fallbacks);
         Sample(out, name, {{"endpoint", endpoint}, {"to", "primary"}}, e.client.replica_fallbacks);
       }
     }},
    {"rankd_redis_cluster_slot_map_reloads_total", "counter",
     "Cluster slot map reloads (a redirect, a lost connection, the periodic refresh), by "
     "endpoint.",
     nullptr, PerEndpoint<[](const EndpointMetrics& e) { return e.client.topology_refreshes; }>},
    {"rankd_redis_up", "gauge",
     "1 when some shard has a connection up to the endpoint (a cluster: every slot covered).",
     nullptr, PerEndpoint<[](const EndpointMetrics& e) { return e.ready ? 1u : 0u; }>},
    {"rankd_feature_cache_lookups_total", "counter",
     "Commands of key schemas with a feature cache, by schema and result: hit (a stored reply), "
     "joined (another request's fetch of the same command), miss (sent to Redis).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [schema, c] : s.t.feature_caches) {
         const std::pair<std::string_view, std::uint64_t> results[] = {
             {"hit", c.hits}, {"joined", c.joined}, {"miss", c.misses}};
         for (const auto& [result, n] : results)
           Sample(out, name, {{"schema", schema}, {"result", result}}, n);
       }
     }},
    {"rankd_feature_cache_removals_total", "counter",
     "Feature cache entries removed, by schema and reason: invalidated (Redis said the key "
     "changed), flushed (a FLUSHDB, a lost connection, a slot moved), evicted (the memory bound), "
     "expired (the TTL or the key's own expiry).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [schema, c] : s.t.feature_caches) {
         const std::pair<std::string_view, std::uint64_t> reasons[] = {
             {"invalidated", c.invalidated_entries},
             {"evicted", c.evictions},
             {"expired", c.expirations}};
         for (const auto& [reason, n] : reasons)
           Sample(out, name, {{"schema", schema}, {"reason", reason}}, n);
       }
     }},
    {"rankd_feature_cache_invalidations_total", "counter",
     "Invalidation messages for the schema's cache: keys Redis said changed (kind key) and "
     "whole-cache flushes (kind all: a FLUSHDB, a SWAPDB, a lost connection, a slot that moved).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (const auto& [schema, c] : s.t.feature_caches) {
         Sample(out, name, {{"schema", schema}, {"kind", "key"}}, c.invalidations);
         Sample(out, name, {{"schema", schema}, {"kind", "all"}}, c.flushes);
       }
     }},
    {"rankd_feature_cache_stale_fetches_total", "counter",
     "Replies not stored because their key changed while they were fetched, by schema.", nullptr,
     PerCache<&redis::ReplyCacheStats::stale_fetches>},
    {"rankd_feature_cache_unknown_expiry_total", "counter",
     "Replies not stored because their key's expiry could not be read (its PTTL failed), by "
     "schema.",
     nullptr, PerCache<&redis::ReplyCacheStats::unknown_expiry>},
    {"rankd_feature_cache_entries", "gauge",
     "Replies in the schema's feature cache, summed over the shards.", nullptr,
     PerCache<&redis::ReplyCacheStats::entries>},
    {"rankd_feature_cache_bytes", "gauge",
     "Bytes the schema's feature cache holds (commands, keys, replies and a fixed overhead per "
     "entry), summed over the shards; at most the schema's max_mb.",
     nullptr, PerCache<&redis::ReplyCacheStats::bytes>},
    {"rankd_http_error_responses_total", "counter",
     "Answers the HTTP layer made itself, by status: a request it could not parse (400, 411, 413, "
     "417, 431, 501, 505), no route (404, 405), a handler that threw (500), a connection over the "
     "shard's limit (503).",
     [](const Scrape& s) { return s.process.http_errors != nullptr; },
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (int status = StatusCounts::kFirst; status <= StatusCounts::kLast; ++status) {
         std::uint64_t n = s.process.http_errors->count(status);
         if (status == 503) n += s.process.connections_rejected.value_or(0);
         if (n == 0 && !HttpLayerErrorCode(status)) continue;
         const std::string status_text = std::to_string(status);
         Sample(out, name, {{"status", status_text}}, n);
       }
     }},
    {"rankd_event_loop_lag_seconds", "gauge",
     "How late the shard's loop woke for its last lag probe (one every 100 ms).", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (std::size_t i = 0; i < s.t.loop_lag_seconds.size(); ++i) {
         const std::string shard = std::to_string(i);
         Sample(out, name, {{"shard", shard}}, s.t.loop_lag_seconds[i]);
       }
     }},
    {"rankd_event_loop_stalls_total", "counter",
     "Loop turns that ran past the stall threshold (10 ms) without polling, by shard.",
     [](const Scrape& s) { return s.process.stalls != nullptr; },
     [](std::string& out, std::string_view name, const Scrape& s) {
       for (std::size_t i = 0; i < s.t.in_flight.size() && i < s.process.stalls->size(); ++i) {
         const std::string shard = std::to_string(i);
         Sample(out, name, {{"shard", shard}}, s.process.stalls->count(i));
       }
     }},
    {"rankd_cpu_pool_queued", "gauge", "CPU pool jobs waiting for a worker.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       Sample(out, name, {}, static_cast<std::uint64_t>(s.process.cpu_pool_queued));
     }},
    {"rankd_cpu_pool_threads", "gauge", "CPU pool worker threads.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       Sample(out, name, {}, static_cast<std::uint64_t>(s.process.cpu_pool_threads));
     }},
    {"rankd_plan_store_reloads_total", "counter", "Plan store reloads that loaded.", nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       Sample(out, name, {}, s.process.reloads);
     }},
    {"rankd_plan_store_reload_failures_total", "counter",
     "Plan store reloads refused (the store did not load whole, or changed the endpoints).",
     nullptr,
     [](std::string& out, std::string_view name, const Scrape& s) {
       Sample(out, name, {}, s.process.reload_failures);
     }},
    // Prometheus' standard process metrics, under their standard names.
    ProcessFamily<&ProcessStats::cpu_seconds>("process_cpu_seconds_total", "counter",
                                              "Total user and system CPU time spent in seconds."),
    ProcessFamily<&ProcessStats::resident_bytes>("process_resident_memory_bytes", "gauge",
                                                 "Resident memory size in bytes."),
    ProcessFamily<&ProcessStats::virtual_bytes>("process_virtual_memory_bytes", "gauge",
                                                "Virtual memory size in bytes."),
    ProcessFamily<&ProcessStats::open_fds>("process_open_fds", "gauge",
                                           "Number of open file descriptors."),
    ProcessFamily<&ProcessStats::max_fds>("process_max_fds", "gauge",
                                          "Maximum number of open file descriptors."),
    ProcessFamily<&ProcessStats::start_time_seconds>(
        "process_start_time_seconds", "gauge",
        "Start time of the process since unix epoch in seconds."),
};

}  // namespace

void Histogram::Observe(double seconds) noexcept {
  std::size_t i = 0;
  while (i < kLatencyBuckets.size() && seconds > kLatencyBuckets[i]) ++i;
  ++counts[i];
  sum += seconds;
}

void Histogram::Add(const Histogram& other) noexcept {
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
}

std::uint64_t Histogram::count() const noexcept {
  std::uint64_t n = 0;
  for (const std::uint64_t c : counts) n += c;
  return n;
}

void ShareHistogram::Observe(double share) noexcept {
  std::size_t i = 0;
  while (i < kShareBuckets.size() && share > kShareBuckets[i]) ++i;
  ++counts[i];
  sum += share;
}

void ShareHistogram::Add(const ShareHistogram& other) noexcept {
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
}

void ShadowMetrics::Add(const ShadowMetrics& other) noexcept {
  overlap_at_k.Add(other.overlap_at_k);
  rbo.Add(other.rbo);
  shared_nodes += other.shared_nodes;
  saved_redis_commands += other.saved_redis_commands;
  redis_commands += other.redis_commands;
}

void StallCounts::Record(std::string_view loop_name) noexcept {
  const std::size_t dash = loop_name.rfind('-');
  if (dash == std::string_view::npos) return;
  std::size_t index = 0;
  const char* first = loop_name.data() + dash + 1;
  const char* last = loop_name.data() + loop_name.size();
  const auto [end, error] = std::from_chars(first, last, index);
  if (error != std::errc() || end != last || index >= counts_.size()) return;
  counts_[index].fetch_add(1, std::memory_order_relaxed);
}

void StatusCounts::Record(int status) noexcept {
  if (status < kFirst || status > kLast) return;
  counts_[static_cast<std::size_t>(status - kFirst)].fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t StatusCounts::count(int status) const noexcept {
  if (status < kFirst || status > kLast) return 0;
  return counts_[static_cast<std::size_t>(status - kFirst)].load(std::memory_order_relaxed);
}

std::string RenderMetrics(const std::vector<ShardMetrics*>& shards, const ProcessMetrics& process) {
  Scrape scrape{Sum(shards), process};
  AddKnownSeries(scrape.t, process);
  std::string out;
  out.reserve(16384);
  for (const MetricFamily& family : kFamilies) {
    if (family.exposed != nullptr && !family.exposed(scrape)) continue;
    Family(out, family.name, family.type, family.help);
    family.samples(out, family.name, scrape);
  }
  return out;
}

}  // namespace rankd::service
