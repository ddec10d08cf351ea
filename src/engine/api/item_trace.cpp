// WriteItemTrace (api/item_trace.h; docs/engine.md, "Tracing items").
#include "api/item_trace.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/row_json.h"
#include "plan/op_table.h"
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

// Why a node that keeps its input's rows did not keep the row at `position` of `input`, by its
// op's removal rule (spec/ops.toml). `first` is its first input's rows.
std::string WhyRemoved(const CompiledNode& node, const CandidateSet& first,
                       const CandidateSet& input, std::size_t position, std::size_t kept,
                       std::size_t id_slot) {
  const NodeParams& params = node.node->params;
  const std::string of = " of " + std::to_string(input.size());
  switch (node.op->removal) {
    case ops::RemovalRule::kPredicate:
      return "its predicate " + params.pred + " was not true for it (false or null)";
    case ops::RemovalRule::kPosition:
      return "at rank " + Rank(position) + of + " in its input; the node kept the first " +
             std::to_string(kept);
    case ops::RemovalRule::kRankByKey: {
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
    case ops::RemovalRule::kEarlierDuplicate: {
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
    case ops::RemovalRule::kNotInserted: {
      // The first row of an id is the one insert considers (a repeat's id is an earlier row's).
      const std::vector<std::size_t> insertable = InsertableRows(first, input, id_slot);
      const auto it = std::find(insertable.begin(), insertable.end(), position);
      const std::string which = it == insertable.end()
                                    ? std::string("a row")
                                    : "insertable row " +
                                          Rank(static_cast<std::size_t>(it - insertable.begin())) +
                                          " of " + std::to_string(insertable.size());
      return "not inserted: " + which + "; the node inserted " +
             std::to_string(kept - first.size()) + " (at most " +
             std::to_string(params.max_inserted) + ", one every " + std::to_string(params.every) +
             " ranks while its first input's rows lasted)";
    }
    case ops::RemovalRule::kSeen:
      return "seen: the viewer's set " + node.set.schema->name + " lists it";
    case ops::RemovalRule::kNone:
      break;
  }
  return "its rows do not have it";
}

}  // namespace

void WriteItemTrace(json::JsonWriter& w, const CompiledPlan& plan, const ExecutionResult& result,
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

  w.BeginArray();
  for (const std::int64_t id : ids) {
    // Per node: where the id is in its rows (nullopt: absent, or the node did not finish).
    std::vector<std::optional<std::size_t>> at(nodes.size());
    bool seen = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (const CandidateSet* rows = rows_of(i)) at[i] = PositionOf(*rows, id_slot, id);
      seen = seen || at[i].has_value();
    }
    // The outcome comes before the lists it is decided from: each list is written on its own and
    // then into the trace.
    std::string nodes_json, removed_json, outputs_json;
    json::JsonWriter nodes_w(nodes_json), removed_w(removed_json), outputs_w(outputs_json);
    nodes_w.BeginArray();
    removed_w.BeginArray();
    outputs_w.BeginArray();
    bool removed = false, returned = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const CompiledNode& node = nodes[i];
      const CandidateSet* rows = rows_of(i);
      nodes_w.BeginObject().Member("node", node.node->id).Key("present");
      if (rows == nullptr) {
        nodes_w.Null().EndObject();
        continue;
      }
      if (!at[i]) {
        nodes_w.Bool(false).EndObject();
        // Removed here: a node that keeps its input's rows lacks it while an input had it.
        if (node.op->makes_candidates) continue;
        for (const std::size_t input : node.inputs) {
          if (!at[input]) continue;
          removed = true;
          removed_w.BeginObject().Member("node", node.node->id).Member("op", OpName(node.node->op));
          const CandidateSet* first = rows_of(node.inputs[0]);
          removed_w.Member("why", WhyRemoved(node, first != nullptr ? *first : *rows_of(input),
                                             *rows_of(input), *at[input], rows->size(), id_slot));
          removed_w.EndObject();
          break;
        }
        continue;
      }
      const std::uint32_t row = rows->row(*at[i]);
      const auto rank = static_cast<std::int64_t>(*at[i] + 1);
      nodes_w.Bool(true).Key("rank").Int(rank).Key("values").BeginObject();
      for (const KeyRef& key : added[i]) {
        nodes_w.Key(registry.keys()[key.slot].name);
        WriteValue(nodes_w, rows->column(key.slot), row);
      }
      nodes_w.EndObject().EndObject();
      if (node.is_output) {
        returned = true;
        outputs_w.BeginObject().Member("node", node.node->id).Key("rank").Int(rank).EndObject();
      }
    }
    nodes_w.EndArray();
    removed_w.EndArray();
    outputs_w.EndArray();
    const char* outcome = returned  ? "returned"
                          : removed ? "removed"
                          : seen    ? "not_returned"
                                    : "not_produced";
    w.BeginObject().Key("id").Int(id).Member("outcome", outcome);
    w.Key("outputs").Raw(outputs_json).Key("removed_by").Raw(removed_json);
    w.Key("nodes").Raw(nodes_json).EndObject();
  }
  w.EndArray();
}

}  // namespace rankd::engine
