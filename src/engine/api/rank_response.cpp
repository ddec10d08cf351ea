// Writing ranking responses and errors as JSON (api/rank_response.h; docs/engine.md,
// "Responses").
#include "rankd/engine/api/rank_response.h"

#include <string>
#include <variant>

#include "api/item_trace.h"
#include "api/row_json.h"
#include "json/canonical.h"
#include "plan/op_table.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

using json::JsonWriter;

void WriteRows(JsonWriter& w, const Registry& registry, const CompiledNode& node,
               const CandidateSet& rows) {
  w.BeginArray();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::uint32_t row = rows.row(i);
    w.BeginObject();
    for (const KeyRef& key : node.output_keys) {
      w.Key(registry.keys()[key.slot].name);
      WriteValue(w, rows.column(key.slot), row);
    }
    w.EndObject();
  }
  w.EndArray();
}

void Count(JsonWriter& w, std::string_view name, std::uint64_t n) {
  w.Key(name).Int(static_cast<std::int64_t>(n));
}

// The "explain" member: every node's report, the totals and, when asked for, the item trace.
void WriteExplain(JsonWriter& w, const CompiledPlan& plan, const ExecutionResult& result,
                  std::span<const std::int64_t> trace_ids) {
  w.Key("explain").BeginObject().Key("nodes").BeginArray();
  std::uint64_t commands = 0, round_trips = 0, shared = 0, saved = 0;
  std::int64_t cpu_us = 0;
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    const Node& node = *plan.nodes()[i].node;
    commands += n.redis_commands;
    round_trips += n.redis_batches;
    cpu_us += n.cpu_us;
    w.BeginObject().Member("node", node.id).Member("op", OpName(node.op));
    w.Member("status", NodeStatusName(n.status));
    if (n.reason != DegradeReason::kNone) w.Member("reason", DegradeReasonName(n.reason));
    w.Key("start_us").Int(n.start_us).Key("end_us").Int(n.end_us);
    Count(w, "rows_in", n.rows_in);
    Count(w, "rows_out", n.rows_out);
    Count(w, "redis_commands", n.redis_commands);
    Count(w, "round_trips", n.redis_batches);
    if (n.cached) {
      Count(w, "cache_hits", n.cache_hits);
      Count(w, "cache_misses", n.cache_misses);
    }
    Count(w, "reply_bytes", n.reply_bytes);
    Count(w, "unparsable_values", n.unparsable_values);
    w.Member("ran_on", n.on_pool ? "pool" : "loop").Key("cpu_us").Int(n.cpu_us);
    if (n.shared) {
      ++shared;
      saved += n.saved_redis_commands;
      w.Member("shared", true);
      Count(w, "saved_redis_commands", n.saved_redis_commands);
    }
    w.EndObject();
  }
  w.EndArray().Key("totals").BeginObject();
  Count(w, "redis_commands", commands);
  if (shared > 0) {
    Count(w, "shared_nodes", shared);
    Count(w, "saved_redis_commands", saved);
  }
  Count(w, "round_trips", round_trips);
  w.Key("cpu_us").Int(cpu_us).Key("elapsed_us").Int(result.elapsed_us).EndObject();
  if (!trace_ids.empty()) {
    w.Key("trace");
    WriteItemTrace(w, plan, result, trace_ids);
  }
  w.EndObject();
}

// `{"request_id":...,"error":{"code":...,"message":...}` (the object left open).
void WriteErrorFields(JsonWriter& w, std::optional<std::string_view> request_id, ErrorCode code,
                      std::string_view message) {
  w.BeginObject();
  if (request_id) w.Member("request_id", *request_id);
  w.Key("error").BeginObject().Member("code", WireName(code)).Member("message", message);
  w.EndObject();
}

}  // namespace

void WriteValue(JsonWriter& w, const Column* column, std::uint32_t row) {
  if (column == nullptr || !column->valid(row)) {
    w.Null();
    return;
  }
  if (column->pending()) {
    // An item trace's row of a node no reader resolved (a request's outputs never are pending).
    const Scalar value = column->Get(row);
    if (const auto* v = std::get_if<std::int64_t>(&value)) {
      w.Int(*v);
    } else if (const auto* d = std::get_if<double>(&value)) {
      w.Double(*d);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      w.Bool(*b);
    } else if (const auto* t = std::get_if<std::string>(&value)) {
      w.String(*t);
    } else {
      w.Null();
    }
    return;
  }
  switch (column->type()) {
    case ValueType::kInt:
      w.Int(column->ints()[row]);
      return;
    case ValueType::kFloat:
      w.Double(column->floats()[row]);
      return;
    case ValueType::kBool:
      w.Bool(column->bools()[row] != 0);
      return;
    case ValueType::kString:
      w.String(column->strings()[row].view());
      return;
  }
}

void WriteRankResponse(std::string& out, const RankedRequest& ranked) {
  const CompiledPlan& plan = ranked.plan;
  const ExecutionResult& result = ranked.result;
  const SurfaceAssignment& assignment = ranked.assignment;
  const Registry& registry = plan.registry();
  JsonWriter w(out);
  w.BeginObject().Member("request_id", ranked.request_id).Member("plan", plan.plan().name);
  w.Member("plan_digest", plan.plan().digest);
  if (!assignment.surface.empty()) {
    w.Member("surface", assignment.surface).Member("variant", assignment.variant);
  }
  w.Key("outputs").BeginObject();
  for (const ExecutionResult::Output& o : result.outputs) {
    w.Key(o.node->node->id);
    WriteRows(w, registry, *o.node, *o.rows);
  }
  w.EndObject().Key("degraded").BeginArray();
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    if (n.status != NodeStatus::kDegraded) continue;
    w.BeginObject().Member("node", plan.nodes()[i].node->id);
    w.Member("reason", DegradeReasonName(n.reason)).Member("message", n.message).EndObject();
  }
  w.EndArray();
  if (ranked.request.explain) WriteExplain(w, plan, result, ranked.request.trace_ids);
  w.EndObject();
}

void WriteServedRecord(std::string& out, const RankedRequest& ranked, std::string_view time) {
  const CompiledPlan& plan = ranked.plan;
  const ExecutionResult& result = ranked.result;
  const SurfaceAssignment& assignment = ranked.assignment;
  const std::optional<std::int64_t>& viewer_id = ranked.request.viewer_id;
  const Registry& registry = plan.registry();
  JsonWriter w(out);
  w.BeginObject();
  if (!time.empty()) w.Member("time", time);
  w.Member("request_id", ranked.request_id).Member("plan", plan.plan().name);
  w.Member("plan_digest", plan.plan().digest).Member("surface", assignment.surface);
  w.Member("variant", assignment.variant).Key("viewer_id");
  if (viewer_id) {
    w.Int(*viewer_id);
  } else {
    w.Null();
  }
  w.Member("request", ranked.body).Key("outputs").BeginObject();
  for (const ExecutionResult::Output& o : result.outputs) {
    const CompiledNode& node = *o.node;
    const bool scored = node.op->orders_by_key;
    w.Key(node.node->id).BeginObject().Key("score_key");
    if (scored) {
      w.String(registry.keys()[node.key.slot].name);
    } else {
      w.Null();
    }
    w.Key("items").BeginArray();
    for (std::size_t r = 0; r < o.rows->size(); ++r) {
      const std::uint32_t row = o.rows->row(r);
      w.BeginObject().Key("rank").Int(static_cast<std::int64_t>(r + 1)).Key("id");
      WriteValue(w, o.rows->column(registry.id_slot()), row);
      w.Key("score");
      WriteValue(w, scored ? o.rows->column(node.key.slot) : nullptr, row);
      w.Key("features").BeginObject();
      for (const KeyRef& key : node.output_keys) {
        if (key.slot == registry.id_slot()) continue;
        w.Key(registry.keys()[key.slot].name);
        WriteValue(w, o.rows->column(key.slot), row);
      }
      w.EndObject().EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndObject().Key("degraded").BeginArray();
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    if (result.nodes[i].status != NodeStatus::kDegraded) continue;
    w.String(plan.nodes()[i].node->id);
  }
  w.EndArray().EndObject();
}

void WriteErrorBody(std::string& out, std::optional<std::string_view> request_id,
                    const RankError& error) {
  JsonWriter w(out);
  WriteErrorFields(w, request_id, error.code, error.message);
  w.EndObject();
}

void WriteFailedRankResponse(std::string& out, const RankedRequest& ranked) {
  const ExecutionResult& result = ranked.result;
  RANKD_D_ASSERT(result.error.has_value());
  JsonWriter w(out);
  WriteErrorFields(w, ranked.request_id, result.error->code, result.error->message);
  if (ranked.request.explain) WriteExplain(w, ranked.plan, result, ranked.request.trace_ids);
  w.EndObject();
}

}  // namespace rankd::engine
