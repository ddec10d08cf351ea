// Writing ranking responses and errors as JSON (api/rank_response.h; docs/engine.md,
// "Responses").
#include "rankd/engine/api/rank_response.h"

#include "api/item_trace.h"
#include "api/row_json.h"
#include "json/canonical.h"
#include "json/number_format.h"
#include "plan/op_table.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

void AppendKey(std::string& out, std::string_view key) {
  json::AppendJsonString(out, key);
  out.push_back(':');
}

void AppendRows(std::string& out, const Registry& registry, const CompiledNode& node,
                const CandidateSet& rows) {
  out.push_back('[');
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out.push_back(',');
    const std::uint32_t row = rows.row(i);
    out.push_back('{');
    bool first = true;
    for (const KeyRef& key : node.output_keys) {
      if (!first) out.push_back(',');
      first = false;
      AppendKey(out, registry.keys()[key.slot].name);
      AppendValue(out, rows.column(key.slot), row);
    }
    out.push_back('}');
  }
  out.push_back(']');
}

void AppendExplain(std::string& out, const CompiledPlan& plan, const ExecutionResult& result,
                   std::span<const std::int64_t> trace_ids) {
  out.append(",\"explain\":{\"nodes\":[");
  std::uint64_t commands = 0, round_trips = 0, shared = 0, saved = 0;
  std::int64_t cpu_us = 0;
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    const Node& node = *plan.nodes()[i].node;
    commands += n.redis_commands;
    round_trips += n.redis_batches;
    cpu_us += n.cpu_us;
    if (i > 0) out.push_back(',');
    out.push_back('{');
    AppendKey(out, "node");
    json::AppendJsonString(out, node.id);
    out.append(",\"op\":");
    json::AppendJsonString(out, OpName(node.op));
    out.append(",\"status\":");
    json::AppendJsonString(out, NodeStatusName(n.status));
    if (n.reason != DegradeReason::kNone) {
      out.append(",\"reason\":");
      json::AppendJsonString(out, DegradeReasonName(n.reason));
    }
    out.append(",\"start_us\":");
    json::AppendInt64(out, n.start_us);
    out.append(",\"end_us\":");
    json::AppendInt64(out, n.end_us);
    out.append(",\"rows_in\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.rows_in));
    out.append(",\"rows_out\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.rows_out));
    out.append(",\"redis_commands\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.redis_commands));
    out.append(",\"round_trips\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.redis_batches));
    if (n.cached) {
      out.append(",\"cache_hits\":");
      json::AppendInt64(out, static_cast<std::int64_t>(n.cache_hits));
      out.append(",\"cache_misses\":");
      json::AppendInt64(out, static_cast<std::int64_t>(n.cache_misses));
    }
    out.append(",\"reply_bytes\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.reply_bytes));
    out.append(",\"unparsable_values\":");
    json::AppendInt64(out, static_cast<std::int64_t>(n.unparsable_values));
    out.append(",\"ran_on\":");
    out.append(n.on_pool ? "\"pool\"" : "\"loop\"");
    out.append(",\"cpu_us\":");
    json::AppendInt64(out, n.cpu_us);
    if (n.shared) {
      ++shared;
      saved += n.saved_redis_commands;
      out.append(",\"shared\":true,\"saved_redis_commands\":");
      json::AppendInt64(out, static_cast<std::int64_t>(n.saved_redis_commands));
    }
    out.push_back('}');
  }
  out.append("],\"totals\":{\"redis_commands\":");
  json::AppendInt64(out, static_cast<std::int64_t>(commands));
  if (shared > 0) {
    out.append(",\"shared_nodes\":");
    json::AppendInt64(out, static_cast<std::int64_t>(shared));
    out.append(",\"saved_redis_commands\":");
    json::AppendInt64(out, static_cast<std::int64_t>(saved));
  }
  out.append(",\"round_trips\":");
  json::AppendInt64(out, static_cast<std::int64_t>(round_trips));
  out.append(",\"cpu_us\":");
  json::AppendInt64(out, cpu_us);
  out.append(",\"elapsed_us\":");
  json::AppendInt64(out, result.elapsed_us);
  out.push_back('}');
  if (!trace_ids.empty()) AppendItemTrace(out, plan, result, trace_ids);
  out.push_back('}');
}

// `{"request_id":...,"error":{"code":...,"message":...}` (not closed).
void AppendErrorFields(std::string& out, std::optional<std::string_view> request_id, ErrorCode code,
                       std::string_view message) {
  out.push_back('{');
  if (request_id) {
    out.append("\"request_id\":");
    json::AppendJsonString(out, *request_id);
    out.push_back(',');
  }
  out.append("\"error\":{\"code\":");
  json::AppendJsonString(out, WireName(code));
  out.append(",\"message\":");
  json::AppendJsonString(out, message);
  out.push_back('}');
}

}  // namespace

void AppendValue(std::string& out, const Column* column, std::uint32_t row) {
  if (column == nullptr || !column->valid(row)) {
    out.append("null");
    return;
  }
  switch (column->type()) {
    case ValueType::kInt:
      json::AppendInt64(out, column->ints()[row]);
      return;
    case ValueType::kFloat:
      json::AppendEcmaScriptNumber(out, column->floats()[row]);
      return;
    case ValueType::kBool:
      out.append(column->bools()[row] != 0 ? "true" : "false");
      return;
    case ValueType::kString:
      json::AppendJsonString(out, column->strings()[row].view());
      return;
  }
}

void WriteRankResponse(std::string& out, const RankedRequest& ranked) {
  const CompiledPlan& plan = ranked.plan;
  const ExecutionResult& result = ranked.result;
  const SurfaceAssignment& assignment = ranked.assignment;
  const Registry& registry = plan.registry();
  out.append("{\"request_id\":");
  json::AppendJsonString(out, ranked.request_id);
  out.append(",\"plan\":");
  json::AppendJsonString(out, plan.plan().name);
  out.append(",\"plan_digest\":");
  json::AppendJsonString(out, plan.plan().digest);
  if (!assignment.surface.empty()) {
    out.append(",\"surface\":");
    json::AppendJsonString(out, assignment.surface);
    out.append(",\"variant\":");
    json::AppendJsonString(out, assignment.variant);
  }
  out.append(",\"outputs\":{");
  for (std::size_t i = 0; i < result.outputs.size(); ++i) {
    if (i > 0) out.push_back(',');
    const ExecutionResult::Output& o = result.outputs[i];
    AppendKey(out, o.node->node->id);
    AppendRows(out, registry, *o.node, *o.rows);
  }
  out.append("},\"degraded\":[");
  bool first = true;
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    if (n.status != NodeStatus::kDegraded) continue;
    if (!first) out.push_back(',');
    first = false;
    out.append("{\"node\":");
    json::AppendJsonString(out, plan.nodes()[i].node->id);
    out.append(",\"reason\":");
    json::AppendJsonString(out, DegradeReasonName(n.reason));
    out.append(",\"message\":");
    json::AppendJsonString(out, n.message);
    out.push_back('}');
  }
  out.push_back(']');
  if (ranked.request.explain) AppendExplain(out, plan, result, ranked.request.trace_ids);
  out.push_back('}');
}

void WriteServedRecord(std::string& out, const RankedRequest& ranked) {
  const CompiledPlan& plan = ranked.plan;
  const ExecutionResult& result = ranked.result;
  const SurfaceAssignment& assignment = ranked.assignment;
  const std::optional<std::int64_t>& viewer_id = ranked.request.viewer_id;
  const Registry& registry = plan.registry();
  out.append("{\"request_id\":");
  json::AppendJsonString(out, ranked.request_id);
  out.append(",\"plan\":");
  json::AppendJsonString(out, plan.plan().name);
  out.append(",\"plan_digest\":");
  json::AppendJsonString(out, plan.plan().digest);
  out.append(",\"surface\":");
  json::AppendJsonString(out, assignment.surface);
  out.append(",\"variant\":");
  json::AppendJsonString(out, assignment.variant);
  out.append(",\"viewer_id\":");
  if (viewer_id) {
    json::AppendInt64(out, *viewer_id);
  } else {
    out.append("null");
  }
  out.append(",\"request\":");
  json::AppendJsonString(out, ranked.body);
  out.append(",\"outputs\":{");
  for (std::size_t i = 0; i < result.outputs.size(); ++i) {
    if (i > 0) out.push_back(',');
    const ExecutionResult::Output& o = result.outputs[i];
    const CompiledNode& node = *o.node;
    AppendKey(out, node.node->id);
    const bool scored = node.op->orders_by_key;
    out.append("{\"score_key\":");
    if (scored) {
      json::AppendJsonString(out, registry.keys()[node.key.slot].name);
    } else {
      out.append("null");
    }
    out.append(",\"items\":[");
    for (std::size_t r = 0; r < o.rows->size(); ++r) {
      if (r > 0) out.push_back(',');
      const std::uint32_t row = o.rows->row(r);
      out.append("{\"rank\":");
      json::AppendInt64(out, static_cast<std::int64_t>(r + 1));
      out.append(",\"id\":");
      AppendValue(out, o.rows->column(registry.id_slot()), row);
      out.append(",\"score\":");
      AppendValue(out, scored ? o.rows->column(node.key.slot) : nullptr, row);
      out.append(",\"features\":{");
      bool first = true;
      for (const KeyRef& key : node.output_keys) {
        if (key.slot == registry.id_slot()) continue;
        if (!first) out.push_back(',');
        first = false;
        AppendKey(out, registry.keys()[key.slot].name);
        AppendValue(out, o.rows->column(key.slot), row);
      }
      out.append("}}");
    }
    out.append("]}");
  }
  out.append("},\"degraded\":[");
  bool first = true;
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    if (result.nodes[i].status != NodeStatus::kDegraded) continue;
    if (!first) out.push_back(',');
    first = false;
    json::AppendJsonString(out, plan.nodes()[i].node->id);
  }
  out.append("]}");
}

void WriteErrorBody(std::string& out, std::optional<std::string_view> request_id,
                    const RankError& error) {
  AppendErrorFields(out, request_id, error.code, error.message);
  out.push_back('}');
}

void WriteFailedRankResponse(std::string& out, const RankedRequest& ranked) {
  const ExecutionResult& result = ranked.result;
  RANKD_D_ASSERT(result.error.has_value());
  AppendErrorFields(out, ranked.request_id, result.error->code, result.error->message);
  if (ranked.request.explain)
    AppendExplain(out, ranked.plan, result, ranked.request.trace_ids);
  out.push_back('}');
}

}  // namespace rankd::engine
