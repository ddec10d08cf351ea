// The Redis sources of the op table (exec/node_runs.h): viewer, follow, recommendation, media,
// fetch_list, fetch_features, exclude_seen. Each sends a wave of commands as one batch on its key
// schema's route (Send: the scheduler's EndpointRoutes, sources/endpoints.h: all at once, pipelined
// by the client, through the schema's feature cache where it has one; the sync scheduler's routes
// send them one at a time) and decodes the replies straight into its columns.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <vector>

#include "exec/capturing_endpoint.h"
#include "exec/node_context.h"
#include "rankd/redis/client_errors.h"
#include "rankd/redis/encoder.h"
#include "rankd/redis/server_error.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/debug_check.h"
#include "rankd/runtime/log.h"
#include "sources/reply_sinks.h"

namespace rankd::engine {
namespace {

// What a client is told about an error reply: the server's message, but for a cluster
// redirection (MOVED, ASK), whose target is a node's address, only its code.
std::string ClientText(std::string_view server_message) {
  const redis::ServerError e = redis::ClassifyError(server_message);
  if (e.kind == redis::ErrorKind::kMoved || e.kind == redis::ErrorKind::kAsk) {
    return std::string(e.code) + " (a cluster redirection)";
  }
  return std::string(server_message);
}

// A failed command's whole story (the server's address included) for the operator's log. The
// same story of an endpoint is told at most once a second per shard, with the count of failures
// it stands for, so an endpoint that is down does not write a line per request; a new one is told
// at once.
void LogRedisFailure(const std::string& endpoint, std::string_view detail) {
  struct Throttle {
    std::string detail;  // of the last line
    std::int64_t logged_ns = 0;
    std::uint64_t unlogged = 0;
  };
  constexpr std::int64_t kSecond = 1'000'000'000;
  thread_local std::map<std::string, Throttle, std::less<>> throttles;  // endpoints: a few
  Throttle& t = throttles[endpoint];
  const std::int64_t now = rt::MonotonicNanos();
  if (t.detail == detail && now - t.logged_ns < kSecond) {
    ++t.unlogged;
    return;
  }
  std::string line = "Redis endpoint " + endpoint + ": " + std::string(detail);
  if (t.unlogged > 0) {
    line += " (and " + std::to_string(t.unlogged) + " failure" + (t.unlogged == 1 ? "" : "s") +
            " not logged since the last line)";
  }
  t.detail.assign(detail);
  t.logged_ns = now;
  t.unlogged = 0;
  rt::LogLine(line);
}

// What a wave's commands are built in. A shard's loop keeps the buffers of waves that ended
// (WaveLease), so that sending a wave allocates nothing once the shard has sent waves of its size.
struct WaveBuffers {
  redis::Batch batch;
  std::string key;         // one command's key, rewritten for each
  std::string field_args;  // HMGET's field names, encoded once per wave
};

// A wave's buffers for the time of one node's wave, taken from the loop thread's spares and given
// back cleared (at most kSpares of them, none over kSpareBytes: a rare huge wave is not kept).
// Thread affinity: the loop thread (a Redis source never leaves it).
class WaveLease {
 public:
  WaveLease() {
    std::vector<std::unique_ptr<WaveBuffers>>& spares = Spares();
    if (spares.empty()) {
      buffers_ = std::make_unique<WaveBuffers>();
    } else {
      buffers_ = std::move(spares.back());
      spares.pop_back();
    }
  }
  WaveLease(const WaveLease&) = delete;
  WaveLease& operator=(const WaveLease&) = delete;
  ~WaveLease() {
    buffers_->batch.Clear();
    std::vector<std::unique_ptr<WaveBuffers>>& spares = Spares();
    if (spares.size() < kSpares && buffers_->batch.reserved_bytes() <= kSpareBytes) {
      spares.push_back(std::move(buffers_));
    }
  }
  WaveBuffers* operator->() const noexcept { return buffers_.get(); }

 private:
  static constexpr std::size_t kSpares = 16;
  static constexpr std::size_t kSpareBytes = 1 << 20;
  static std::vector<std::unique_ptr<WaveBuffers>>& Spares() {
    thread_local std::vector<std::unique_ptr<WaveBuffers>> spares;
    return spares;
  }
  std::unique_ptr<WaveBuffers> buffers_;
};

// Sinks for `n` commands, in the node's arena (they hold only pointers into the request).
template <class Sink>
Sink* SinkArray(Arena& arena, std::size_t n) {
  return arena.Allocate<Sink>(std::max<std::size_t>(n, 1));
}

// Room in `batch` for `commands` commands on keys of `schema`, each `args_bytes` long besides its
// key: one allocation per buffer for a whole wave.
void ReserveWave(redis::Batch& batch, const KeySchema& schema, std::size_t commands,
                 std::size_t args_bytes) {
  const std::size_t key_bytes = schema.prefix.size() + schema.suffix.size() + 20;
  batch.Reserve(commands, commands * (key_bytes + args_bytes + 16), commands * key_bytes);
}

const Column& IdColumn(const CandidateSet& rows, const Registry& registry) {
  return *rows.column(registry.id_slot());
}

// What a node's batch counts into its report, however its call ends: its commands (cache hits
// included) as it goes out; then the round trips its endpoints started (a timeout cancels the
// call, not the count) and, on a route through a feature cache, how the cache answered.
class CountBatch {
 public:
  CountBatch(NodeReport& report, const redis::Batch& batch, bool cached)
      : report_(report), batch_(batch), cached_(cached) {
    report_.redis_commands += batch_.size();
  }
  CountBatch(const CountBatch&) = delete;
  CountBatch& operator=(const CountBatch&) = delete;
  ~CountBatch() {
    report_.redis_batches += batch_.round_trips();
    if (!cached_) return;
    report_.cached = true;
    report_.cache_hits += batch_.cache_counts().hits + batch_.cache_counts().joined;
    report_.cache_misses += batch_.cache_counts().misses;
  }

 private:
  NodeReport& report_;
  const redis::Batch& batch_;
  bool cached_;
};

// Sends `batch` on the schema's route (the scheduler's: through its feature cache where it has
// one; through a CapturingEndpoint when the request is captured) and turns every failure into an
// UpstreamError naming the endpoint (the node's own timeout and the request's deadline cancel:
// they pass through). The message reaches the client: it names the endpoint, never the server's
// address, which goes to the log (LogRedisFailure).
rt::Task<void> Send(NodeContext& node, const SchemaRef& schema, redis::Batch& batch) {
  if (batch.empty()) co_return;
  const std::string& name = schema.schema->endpoint;
  const EndpointRoutes::Route route = node.endpoints.For(schema.endpoint, *schema.schema);
  if (route.endpoint == nullptr) throw UpstreamError("no client for endpoint \"" + name + "\"");
  std::optional<CapturingEndpoint> capturing;
  Endpoint& endpoint =
      node.capture == nullptr ? *route.endpoint : capturing.emplace(*route.endpoint, *node.capture);
  const CountBatch count(node.report, batch, route.cached);
  std::string failure;
  try {
    co_await endpoint.Execute(batch);
  } catch (const rt::DeadlineExceeded&) {
    failure = "Redis endpoint " + name + " did not answer within its command timeout";
  } catch (const redis::ConnectionError& e) {  // and ProtocolError
    LogRedisFailure(name, e.what());
    failure = "Redis endpoint " + name + " " + e.summary();
  } catch (const redis::ServerReplyError& e) {
    LogRedisFailure(name, e.what());
    failure = "Redis endpoint " + name + " answered " + ClientText(e.message());
  } catch (const redis::RedisError& e) {
    LogRedisFailure(name, e.what());
    failure = "Redis endpoint " + name + " failed";
  }
  if (!failure.empty()) throw UpstreamError(failure);
  for (std::size_t k = 0; k < batch.size(); ++k) {
    if (const std::optional<std::string>& error = batch.error(k)) {
      throw UpstreamError("Redis endpoint " + name + " answered " + ClientText(*error) + " (key " +
                          std::string(batch.key(k)) + ")");
    }
  }
}

// How a hash is read: every field (HGETALL, keeping the schema's yields: users) or the node's
// named fields (HMGET: fetch_features).
enum class HashRead : std::uint8_t { kAllFields, kNamedFields };

// The hash of every row of `rows`, into new columns of the node's fields (replacing columns the
// rows had for those keys).
rt::Task<void> FetchHashes(NodeContext& node, CandidateSet& rows, HashRead read) {
  const CompiledNode& c = node.node;
  const Registry& reg = node.registry();
  Arena& arena = node.arena;
  // Fields no node reads on every row stay pending (lazy decoding), unless a feature cache keeps
  // the replies' decoded values.
  const bool cached = node.endpoints.For(c.hash.endpoint, *c.hash.schema).cached;
  Column** column_array = arena.Allocate<Column*>(std::max<std::size_t>(c.fields.size(), 1));
  for (std::size_t f = 0; f < c.fields.size(); ++f) {
    const KeyRef& k = c.fields[f];
    column_array[f] = !cached && c.pending_fields[f] != 0
                          ? Column::MakePending(arena, k.type, rows.physical_rows())
                          : Column::Make(arena, k.type, rows.physical_rows());
    rows.set_column(k.slot, column_array[f]);
  }
  const std::span<Column* const> columns(column_array, c.fields.size());
  const Column& ids = IdColumn(rows, reg);
  DecodeCounts counts;
  ReplyProblem problem;
  WaveLease wave;
  redis::Batch& batch = wave->batch;
  HashFieldsSink* hash_sinks = nullptr;
  FieldValuesSink* field_sinks = nullptr;
  if (read == HashRead::kAllFields) {
    hash_sinks = SinkArray<HashFieldsSink>(arena, rows.size());
  } else {
    field_sinks = SinkArray<FieldValuesSink>(arena, rows.size());
  }
  const KeySchema& schema = *c.hash.schema;
  // HMGET's field names follow the key in every command: encoded once.
  std::string& field_args = wave->field_args;
  field_args.clear();
  if (read == HashRead::kNamedFields) redis::AppendBulks(field_args, c.field_names);
  ReserveWave(batch, schema, rows.size(), field_args.size() + 16);
  std::string& key = wave->key;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint32_t row = rows.row(r);
    key.clear();
    schema.AppendKey(key, ids.ints()[row]);
    if (read == HashRead::kAllFields) {
      HashFieldsSink* sink = ::new (&hash_sinks[r])
          HashFieldsSink(c.field_names, columns, row, &arena, &counts, &problem);
      batch.Command(key, *sink, 2).Arg("HGETALL").Arg(key);
    } else {
      FieldValuesSink* sink =
          ::new (&field_sinks[r]) FieldValuesSink(columns, row, &arena, &counts, &problem);
      batch.Command(key, *sink, 2 + c.field_names.size())
          .Arg("HMGET")
          .Arg(key)
          .EncodedArgs(field_args, c.field_names.size());
    }
  }
  co_await Send(node, c.hash, batch);
  node.report.reply_bytes += counts.reply_bytes;
  node.report.unparsable_values += counts.unparsable;
  if (!problem.ok()) throw UpstreamError("unexpected reply: " + problem.message());
}

// One list of ids per input row (LRANGE 0 fanout-1), concatenated in input order: the rows of a
// new candidate set with only the id key.
rt::Task<CandidateSet*> ReadIdLists(NodeContext& node) {
  const CompiledNode& c = node.node;
  const Registry& reg = node.registry();
  const CandidateSet& input = node.input(0);
  Arena& arena = node.arena;
  const std::int64_t fanout = c.node->params.fanout;
  const std::size_t n = input.size();
  // Every list, each into its own stretch of one buffer.
  std::int64_t* ids = arena.Allocate<std::int64_t>(std::max<std::size_t>(n * fanout, 1));
  DecodeCounts counts;
  ReplyProblem problem;
  IdListSink* sinks = SinkArray<IdListSink>(arena, n);
  WaveLease wave;
  redis::Batch& batch = wave->batch;
  const Column& input_ids = IdColumn(input, reg);
  const KeySchema& schema = *c.list.schema;
  ReserveWave(batch, schema, n, 32);
  std::string& key = wave->key;
  for (std::size_t r = 0; r < n; ++r) {
    IdListSink* sink = ::new (&sinks[r])
        IdListSink(ids + r * fanout, static_cast<std::size_t>(fanout), &counts, &problem);
    key.clear();
    schema.AppendKey(key, input_ids.ints()[input.row(r)]);
    batch.Command(key, *sink, 4).Arg("LRANGE").Arg(key).Arg(0).Arg(fanout - 1);
  }
  co_await Send(node, c.list, batch);
  node.report.reply_bytes += counts.reply_bytes;
  if (!problem.ok()) throw UpstreamError("unexpected reply: " + problem.message());
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) total += sinks[r].size();
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), total);
  Column* id = Column::Make(arena, ValueType::kInt, total);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    std::copy_n(ids + r * fanout, sinks[r].size(), id->ints() + at);
    at += sinks[r].size();
  }
  for (std::size_t r = 0; r < total; ++r) id->set_valid(r);
  rows->set_column(reg.id_slot(), id);
  co_return rows;
}

}  // namespace

rt::Task<const CandidateSet*> RunViewerNode(NodeContext& node) {
  const Registry& reg = node.registry();
  // The ranker checks a plan that reads the viewer has one; this is for callers that did not.
  if (!node.request.viewer_id)
    throw std::invalid_argument("the plan reads the viewer, and the request has no viewer_id");
  Arena& arena = node.arena;
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), 1);
  Column* id = Column::Make(arena, ValueType::kInt, 1);
  id->ints()[0] = *node.request.viewer_id;
  id->set_valid(0);
  rows->set_column(reg.id_slot(), id);
  node.IdsKnown(*rows);
  co_await FetchHashes(node, *rows, HashRead::kAllFields);
  co_return rows;
}

rt::Task<const CandidateSet*> RunUserListNode(NodeContext& node) {
  // Wave one: every list; wave two: every listed user's hash (none when no one is listed: the
  // user columns are then empty).
  CandidateSet* rows = co_await ReadIdLists(node);
  node.IdsKnown(*rows);
  co_await FetchHashes(node, *rows, HashRead::kAllFields);
  co_return rows;
}

rt::Task<const CandidateSet*> RunIdListNode(NodeContext& node) {
  co_return co_await ReadIdLists(node);
}

rt::Task<const CandidateSet*> RunExcludeSeenNode(NodeContext& node) {
  // docs/plan-format.md, "Seen items": SMISMEMBER on the viewer's set, kIdsPerCommand ids a
  // command (the op's cost counts chunks(in, 512)), then the input's rows whose flag is 0.
  constexpr std::size_t kIdsPerCommand = 512;
  const CompiledNode& c = node.node;
  const Registry& reg = node.registry();
  const CandidateSet& input = node.input(0);
  Arena& arena = node.arena;
  // The ranker checks a plan that reads the viewer has one; this is for callers that did not.
  if (!node.request.viewer_id)
    throw std::invalid_argument("the plan reads the viewer, and the request has no viewer_id");
  const std::size_t n = input.size();
  const std::size_t commands = (n + kIdsPerCommand - 1) / kIdsPerCommand;
  std::uint8_t* seen = arena.Allocate<std::uint8_t>(std::max<std::size_t>(n, 1));
  ReplyProblem problem;
  MembershipSink* sinks = SinkArray<MembershipSink>(arena, commands);
  WaveLease wave;
  redis::Batch& batch = wave->batch;
  const KeySchema& schema = *c.set.schema;
  ReserveWave(batch, schema, commands, std::min(n, kIdsPerCommand) * 28 + 16);
  std::string& key = wave->key;
  key.clear();
  schema.AppendKey(key, *node.request.viewer_id);
  const Column& ids = IdColumn(input, reg);
  for (std::size_t first = 0; first < n; first += kIdsPerCommand) {
    const std::size_t count = std::min(kIdsPerCommand, n - first);
    MembershipSink* sink =
        ::new (&sinks[first / kIdsPerCommand]) MembershipSink(seen + first, count, &problem);
    redis::CommandWriter command = batch.Command(key, *sink, 2 + count);
    command.Arg("SMISMEMBER").Arg(key);
    for (std::size_t r = first; r < first + count; ++r) command.Arg(ids.ints()[input.row(r)]);
  }
  co_await Send(node, c.set, batch);
  if (!problem.ok()) throw UpstreamError("unexpected reply: " + problem.message());
  // Every id's flag came (an endpoint hands each command a reply or fails the call; checked
  // rather than trusted, since a row kept or dropped on a missing flag would be silently wrong).
  for (std::size_t k = 0; k < commands; ++k) {
    if (!sinks[k].complete()) throw UpstreamError("unexpected reply: SMISMEMBER got no reply");
  }
  std::uint32_t* kept = arena.Allocate<std::uint32_t>(std::max<std::size_t>(n, 1));
  std::size_t count = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (seen[r] == 0) kept[count++] = input.row(r);
  }
  CandidateSet* rows = CandidateSet::CopyOf(arena, input);
  rows->set_selection(kept, count);
  co_return rows;
}

rt::Task<const CandidateSet*> RunFetchFeaturesNode(NodeContext& node) {
  CandidateSet* rows = CandidateSet::CopyOf(node.arena, node.input(0));
  co_await FetchHashes(node, *rows, HashRead::kNamedFields);
  co_return rows;
}

}  // namespace rankd::engine
