#include "plan_answer.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace rankd::engine::testing {
namespace {

bool SameScalar(const Scalar& a, const Scalar& b) {
  if (a.index() != b.index()) return false;
  if (std::holds_alternative<double>(a)) {
    const double x = std::get<double>(a), y = std::get<double>(b);
    return std::memcmp(&x, &y, sizeof x) == 0;  // bit-identical, -0.0 included
  }
  return a == b;
}

std::string ShowScalar(const Scalar& v) {
  std::ostringstream out;
  if (IsNull(v)) out << "null";
  if (std::holds_alternative<double>(v)) out << std::hexfloat << std::get<double>(v);
  if (std::holds_alternative<std::int64_t>(v)) out << std::get<std::int64_t>(v);
  if (std::holds_alternative<bool>(v)) out << (std::get<bool>(v) ? "true" : "false");
  if (std::holds_alternative<std::string>(v)) {
    out << '"';
    for (const unsigned char c : std::get<std::string>(v)) {
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
        out << c;
      } else {
        static const char kHex[] = "0123456789abcdef";
        out << "\\x" << kHex[c >> 4] << kHex[c & 15];
      }
    }
    out << '"';
  }
  return out.str();
}

std::string ShowRow(const std::vector<std::string>& keys, const std::vector<Scalar>& row) {
  std::string out;
  for (std::size_t k = 0; k < keys.size() && k < row.size(); ++k) {
    if (k > 0) out += ' ';
    out += keys[k] + "=" + ShowScalar(row[k]);
  }
  return out;
}

}  // namespace

std::string ErrorCodeName(const ExecutionError& error) { return std::string(WireName(error.code)); }

PlanAnswer AnswerOf(const ExecutionResult& result, const CompiledPlan& plan) {
  PlanAnswer answer;
  if (result.error) {
    answer.error_code = ErrorCodeName(*result.error);
    return answer;
  }
  const Registry& registry = plan.registry();
  for (const ExecutionResult::Output& o : result.outputs) {
    PlanAnswer::Output out;
    out.node = o.node->node->id;
    for (const KeyRef& k : o.node->output_keys) out.keys.push_back(registry.keys()[k.slot].name);
    for (std::size_t i = 0; i < o.rows->size(); ++i) {
      const std::uint32_t row = o.rows->row(i);
      std::vector<Scalar> values;
      for (const KeyRef& k : o.node->output_keys) {
        const Column* c = o.rows->column(k.slot);
        values.push_back(c == nullptr ? Scalar{} : c->Get(row));
      }
      out.rows.push_back(std::move(values));
    }
    answer.outputs.push_back(std::move(out));
  }
  std::vector<std::pair<std::size_t, PlanAnswer::Degraded>> degraded;
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& report = result.nodes[i];
    if (report.status != NodeStatus::kDegraded) continue;
    const CompiledNode& node = plan.nodes()[i];
    degraded.emplace_back(
        node.plan_index,
        PlanAnswer::Degraded{node.node->id, std::string(DegradeReasonName(report.reason))});
  }
  std::sort(degraded.begin(), degraded.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [index, d] : degraded) answer.degraded.push_back(std::move(d));
  return answer;
}

std::optional<std::string> Difference(const PlanAnswer& want,
                                      const std::set<std::string>& allowed_codes,
                                      const PlanAnswer& got) {
  if (want.error_code || got.error_code) {
    if (!want.error_code) return "the request failed with " + *got.error_code + ", expected rows";
    if (!got.error_code) return "the request succeeded, expected error " + *want.error_code;
    if (allowed_codes.count(*got.error_code) == 0 && *got.error_code != *want.error_code) {
      return "error " + *got.error_code + ", expected " + *want.error_code;
    }
    return std::nullopt;
  }
  if (want.outputs.size() != got.outputs.size()) return "a different number of outputs";
  for (std::size_t o = 0; o < want.outputs.size(); ++o) {
    const PlanAnswer::Output& w = want.outputs[o];
    const PlanAnswer::Output& g = got.outputs[o];
    const std::string where = "output " + w.node;
    if (w.node != g.node)
      return where + ": the engine's output " + std::to_string(o) + " is " + g.node;
    if (w.keys != g.keys) return where + ": other keys";
    if (w.rows.size() != g.rows.size()) {
      return where + ": " + std::to_string(g.rows.size()) + " rows, expected " +
             std::to_string(w.rows.size());
    }
    for (std::size_t r = 0; r < w.rows.size(); ++r) {
      for (std::size_t k = 0; k < w.keys.size(); ++k) {
        if (!SameScalar(w.rows[r][k], g.rows[r][k])) {
          return where + " row " + std::to_string(r) + " key " + w.keys[k] + ": " +
                 ShowScalar(g.rows[r][k]) + ", expected " + ShowScalar(w.rows[r][k]);
        }
      }
    }
  }
  if (want.degraded != got.degraded) return "other degraded nodes";
  return std::nullopt;
}

std::string Describe(const PlanAnswer& answer) {
  std::string out;
  if (answer.error_code) return "  error " + *answer.error_code + "\n";
  for (const PlanAnswer::Output& o : answer.outputs) {
    out += "  output " + o.node + " (" + std::to_string(o.rows.size()) + " rows):\n";
    for (const auto& row : o.rows) out += "    " + ShowRow(o.keys, row) + "\n";
  }
  out += "  degraded:";
  for (const PlanAnswer::Degraded& d : answer.degraded) out += " " + d.node + "(" + d.reason + ")";
  out += "\n";
  return out;
}

}  // namespace rankd::engine::testing
