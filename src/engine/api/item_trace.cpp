// AppendItemTrace (api/item_trace.h; docs/engine.md, "Tracing items").
#include "api/item_trace.h"

#include <optional>
#include <set>
#include <vector>

#include "api/row_json.h"
#include "json/number_format.h"
#include "plan/op_table.h"
#include "rankd/engine/json/json_text.h"
#include "rankd/engine/ops/cpu_ops.h"

namespace rankd::engine {
namespace {

// The 0-based position among `rows`' logical rows of the first row with `id`, or nullopt.
std::optional<std::size_t> PositionOf(const CandidateSet& rows, std::size_t id_slot,
                                      std::int64_t id) {
  const Column* ids = rows.column(id_slot);
  if (ids == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::uint32_t row = rows.row(i);
    if (ids->valid(row) && ids->ints()[row] == id) return i;
  }
  return std::nullopt;
}

std::string Rank(std::size_t position) { return std::to_string(position + 1); }

// Why a node that keeps its input's rows (filter, dedupe, topk, take, ...) did not keep the row
// at `position` of `input`.
std::string WhyRemoved(const CompiledNode& node, const CandidateSet& input, std::size_t position,
                       std::size_t kept) {
  const NodeParams& params = node.node->params;
  const std::string of = " of " + std::to_string(input.size());
  switch (node.node->op) {
    case Op::kFilter:
      return "its predicate " + params.pred + " was not true for it (false or null)";
    case Op::kTake:
      return "at rank " + Rank(position) + of + " in its input; the node kept the first " +
             std::to_string(kept);
    case Op::kTopk: {
      // Its rank by `by` as topk orders (highest first, ties in input order, nulls last): the
      // stable descending sort's.
      Arena arena(4096);
      const CandidateSet* sorted = RunSort(input, node.key.slot, SortOrder::kDesc, arena);
      const std::uint32_t row = input.row(position);
      std::optional<std::size_t> by_rank;
      for (std::size_t i = 0; i < sorted->size() && !by_rank; ++i) {
        if (sorted->row(i) == row) by_rank = i;
      }
      return "ranked " + (by_rank ? Rank(*by_rank) : std::string("?")) + of + " by " + params.by +
             "; the node kept the top " + std::to_string(kept);
    }
    case Op::kDedupe: {
      const Column* by = input.column(node.key.slot);
      const std::uint32_t row = input.row(position);
      for (std::size_t i = 0; i < position; ++i) {
        const std::uint32_t earlier = input.row(i);
        const bool same =
            by == nullptr || (!by->valid(row) && !by->valid(earlier)) ||
            (by->valid(row) && by->valid(earlier) && by->Get(row) == by->Get(earlier));
        if (same) {
          return "the row at rank " + Rank(i) + " of its input has the same " + params.by +
                 " value and came first";
        }
      }
      return "a row before it has the same " + params.by + " value";
    }
    default:
      return "its rows do not have it";
  }
}

}  // namespace

void AppendItemTrace(std::string& out, const CompiledPlan& plan, const ExecutionResult& result,
                     std::span<const std::int64_t> ids) {
  const Registry& registry = plan.registry();
  const std::vector<CompiledNode>& nodes = plan.nodes();
  const std::size_t id_slot = registry.id_slot();
  std::vector<std::vector<KeyRef>> added;
  added.reserve(nodes.size());
  for (const CompiledNode& node : nodes) added.push_back(AddedKeys(plan, node));
  const auto rows_of = [&result](std::size_t i) -> const CandidateSet* {
    return i < result.node_rows.size() ? result.node_rows[i] : nullptr;
  };

  out.append(",\"trace\":[");
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const std::int64_t id = ids[t];
    // Per node: where the id is in its rows (nullopt: absent, or the node did not finish).
    std::vector<std::optional<std::size_t>> at(nodes.size());
    bool seen = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (const CandidateSet* rows = rows_of(i)) at[i] = PositionOf(*rows, id_slot, id);
      seen = seen || at[i].has_value();
    }
    std::string nodes_json, removed_json, outputs_json;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const CompiledNode& node = nodes[i];
      const CandidateSet* rows = rows_of(i);
      if (!nodes_json.empty()) nodes_json.push_back(',');
      nodes_json.append("{\"node\":");
      json::AppendJsonString(nodes_json, node.node->id);
      nodes_json.append(",\"present\":");
      if (rows == nullptr) {
        nodes_json.append("null}");
        continue;
      }
      if (!at[i]) {
        nodes_json.append("false}");
        // Removed here: a node that keeps its input's rows lacks it while an input had it.
        if (node.op->degrade == ops::DegradeRule::kNoRows) continue;
        for (const std::size_t input : node.inputs) {
          if (!at[input]) continue;
          if (!removed_json.empty()) removed_json.push_back(',');
          removed_json.append("{\"node\":");
          json::AppendJsonString(removed_json, node.node->id);
          removed_json.append(",\"op\":");
          json::AppendJsonString(removed_json, OpName(node.node->op));
          removed_json.append(",\"why\":");
          json::AppendJsonString(removed_json,
                                 WhyRemoved(node, *rows_of(input), *at[input], rows->size()));
          removed_json.push_back('}');
          break;
        }
        continue;
      }
      const std::uint32_t row = rows->row(*at[i]);
      nodes_json.append("true,\"rank\":");
      json::AppendInt64(nodes_json, static_cast<std::int64_t>(*at[i] + 1));
      nodes_json.append(",\"values\":{");
      for (std::size_t k = 0; k < added[i].size(); ++k) {
        if (k > 0) nodes_json.push_back(',');
        json::AppendJsonString(nodes_json, registry.keys()[added[i][k].slot].name);
        nodes_json.push_back(':');
        AppendValue(nodes_json, rows->column(added[i][k].slot), row);
      }
      nodes_json.append("}}");
      if (node.is_output) {
        if (!outputs_json.empty()) outputs_json.push_back(',');
        outputs_json.append("{\"node\":");
        json::AppendJsonString(outputs_json, node.node->id);
        outputs_json.append(",\"rank\":");
        json::AppendInt64(outputs_json, static_cast<std::int64_t>(*at[i] + 1));
        outputs_json.push_back('}');
      }
    }
    const char* outcome = !outputs_json.empty()   ? "returned"
                          : !removed_json.empty() ? "removed"
                          : seen                  ? "not_returned"
                                                  : "not_produced";
    if (t > 0) out.push_back(',');
    out.append("{\"id\":");
    json::AppendInt64(out, id);
    out.append(",\"outcome\":\"");
    out.append(outcome);
    out.append("\",\"outputs\":[");
    out.append(outputs_json);
    out.append("],\"removed_by\":[");
    out.append(removed_json);
    out.append("],\"nodes\":[");
    out.append(nodes_json);
    out.append("]}");
  }
  out.push_back(']');
}

}  // namespace rankd::engine
