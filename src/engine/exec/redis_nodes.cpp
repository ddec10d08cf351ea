// The nodes that read Redis: viewer, follow, recommendation, media, fetch_list, fetch_features.
// Each sends a wave of commands as one batch (all at once, pipelined by the client; one at a time
// under the sync scheduler) and decodes the replies straight into its columns.
#include <algorithm>

#include "rankd/redis/client_errors.h"
#include "rankd/redis/encoder.h"
#include "request.h"

namespace rankd::engine {
namespace {

std::string ListCommand(const std::string& key, std::int64_t count) {
  std::string out;
  redis::AppendCommand(out, "LRANGE", key, 0, count - 1);
  return out;
}

std::string HashCommand(const std::string& key) {
  std::string out;
  redis::AppendCommand(out, "HGETALL", key);
  return out;
}

std::string FieldsCommand(const std::string& key, const std::vector<std::string>& fields) {
  std::string out;
  redis::CommandWriter cmd(out, 2 + fields.size());
  cmd.Arg("HMGET").Arg(key);
  for (const std::string& f : fields) cmd.Arg(f);
  return out;
}

// The registry names of a node's hash fields, in the order of its columns.
std::vector<std::string> FieldNames(const Registry& registry, const std::vector<KeyRef>& fields) {
  std::vector<std::string> names;
  names.reserve(fields.size());
  for (const KeyRef& k : fields) names.push_back(registry.keys()[k.slot].name);
  return names;
}

const Column& IdColumn(const CandidateSet& rows, const Registry& registry) {
  return *rows.column(registry.id_slot());
}

}  // namespace

rt::Task<void> Request::Send(std::size_t i, const KeySchema& schema, RedisBatch& batch) {
  if (batch.empty()) co_return;
  Endpoint* endpoint = endpoints_.Find(schema.endpoint);
  if (endpoint == nullptr) {
    throw UpstreamError("no client for endpoint \"" + schema.endpoint + "\"");
  }
  NodeReport& report = nodes_[i].report;
  report.redis_commands += batch.size();
  // A pipelined batch is one round trip; the sync scheduler waits for each command's reply.
  report.redis_batches += options_.scheduler == Scheduler::kSync ? batch.size() : 1;
  std::string failure;
  try {
    if (options_.scheduler == Scheduler::kSync) {
      co_await endpoint->ExecuteOneByOne(batch);
    } else {
      co_await endpoint->Execute(batch);
    }
  } catch (const rt::DeadlineExceeded&) {
    // The endpoint's command timeout (the node's own timeout and the request's deadline cancel,
    // they do not end up here).
    failure = "Redis endpoint " + schema.endpoint + " did not answer within its command timeout";
  } catch (const redis::RedisError& e) {
    failure = "Redis endpoint " + schema.endpoint + ": " + e.what();
  }
  if (!failure.empty()) throw UpstreamError(failure);
  for (std::size_t k = 0; k < batch.size(); ++k) {
    if (const std::optional<std::string>& error = batch.error(k)) {
      throw UpstreamError("Redis endpoint " + schema.endpoint + " answered " + *error + " (key " +
                          batch.items()[k].key + ")");
    }
  }
}

// Hashes of every row: HGETALL (all_fields: the schema's yields, for users) or HMGET of the
// node's keys, into new columns of `rows` (replacing columns it had for those keys).
rt::Task<void> Request::FetchHashes(std::size_t i, const KeySchema& schema, CandidateSet& rows,
                                    bool all_fields) {
  const CompiledNode& c = plan_->nodes()[i];
  const Registry& reg = plan_->registry();
  Arena& arena = *nodes_[i].arena;
  std::vector<Column*> columns;
  for (const KeyRef& k : c.fields) {
    Column* column = Column::Make(arena, k.type, rows.physical_rows());
    columns.push_back(column);
    rows.set_column(k.slot, column);
  }
  const std::vector<std::string> names = FieldNames(reg, c.fields);
  const Column& ids = IdColumn(rows, reg);
  DecodeCounts counts;
  ReplyProblem problem;
  RedisBatch batch;
  std::vector<HashFieldsSink> hash_sinks;
  std::vector<FieldValuesSink> field_sinks;
  if (all_fields) {
    hash_sinks.reserve(rows.size());
  } else {
    field_sinks.reserve(rows.size());
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint32_t row = rows.row(r);
    std::string key = schema.KeyFor(ids.ints()[row]);
    if (all_fields) {
      hash_sinks.emplace_back(names, columns, row, &arena, &counts, &problem);
      std::string command = HashCommand(key);
      batch.Add(std::move(key), std::move(command), hash_sinks.back());
    } else {
      field_sinks.emplace_back(columns, row, &arena, &counts, &problem);
      std::string command = FieldsCommand(key, names);
      batch.Add(std::move(key), std::move(command), field_sinks.back());
    }
  }
  co_await Send(i, schema, batch);
  NodeReport& report = nodes_[i].report;
  report.reply_bytes += counts.reply_bytes;
  report.unparsable_values += counts.unparsable;
  if (!problem.ok()) throw UpstreamError("unexpected reply: " + problem.message());
}

rt::Task<const CandidateSet*> Request::Viewer(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  const Registry& reg = plan_->registry();
  if (!inputs_.viewer_id)
    throw std::invalid_argument("the plan reads the viewer, and the request has no viewer_id");
  Arena& arena = *nodes_[i].arena;
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), 1);
  Column* id = Column::Make(arena, ValueType::kInt, 1);
  id->ints()[0] = *inputs_.viewer_id;
  id->set_valid(0);
  rows->set_column(reg.id_slot(), id);
  co_await FetchHashes(i, *c.hash_schema, *rows, true);
  co_return rows;
}

rt::Task<const CandidateSet*> Request::Lists(std::size_t i, bool then_users) {
  const CompiledNode& c = plan_->nodes()[i];
  const Registry& reg = plan_->registry();
  const CandidateSet& input = Input(i, 0);
  Arena& arena = *nodes_[i].arena;
  const std::int64_t fanout = c.node->params.fanout;
  const std::size_t n = input.size();
  // Wave one: every list, each into its own stretch of one buffer.
  std::int64_t* ids = arena.Allocate<std::int64_t>(std::max<std::size_t>(n * fanout, 1));
  DecodeCounts counts;
  ReplyProblem problem;
  std::vector<IdListSink> sinks;
  sinks.reserve(n);
  RedisBatch batch;
  const Column& input_ids = IdColumn(input, reg);
  for (std::size_t r = 0; r < n; ++r) {
    sinks.emplace_back(ids + r * fanout, static_cast<std::size_t>(fanout), &counts, &problem);
    std::string key = c.list_schema->KeyFor(input_ids.ints()[input.row(r)]);
    std::string command = ListCommand(key, fanout);
    batch.Add(std::move(key), std::move(command), sinks.back());
  }
  co_await Send(i, *c.list_schema, batch);
  nodes_[i].report.reply_bytes += counts.reply_bytes;
  if (!problem.ok()) throw UpstreamError("unexpected reply: " + problem.message());
  std::size_t total = 0;
  for (const IdListSink& s : sinks) total += s.size();
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), total);
  Column* id = Column::Make(arena, ValueType::kInt, total);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    std::copy_n(ids + r * fanout, sinks[r].size(), id->ints() + at);
    at += sinks[r].size();
  }
  for (std::size_t r = 0; r < total; ++r) id->set_valid(r);
  rows->set_column(reg.id_slot(), id);
  // Wave two (follow, recommendation): every listed user's hash.
  if (then_users && total > 0) co_await FetchHashes(i, *c.hash_schema, *rows, true);
  co_return rows;
}

rt::Task<const CandidateSet*> Request::FetchFeatures(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  CandidateSet* rows = CandidateSet::CopyOf(*nodes_[i].arena, Input(i, 0));
  co_await FetchHashes(i, *c.hash_schema, *rows, false);
  co_return rows;
}

}  // namespace rankd::engine
