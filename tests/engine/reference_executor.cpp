#include "reference_executor.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "tree_walk.h"

namespace rankd::engine::testing {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// int: an optional '-' and 1 to 19 ASCII digits, within int64.
std::optional<std::int64_t> ParseIntText(std::string_view text) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  const std::size_t digits = text.size() - i;
  if (digits < 1 || digits > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (; i < text.size(); ++i) {
    if (!IsDigit(text[i])) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  const std::uint64_t limit = std::uint64_t{1} << 63;  // |INT64_MIN|
  if (negative) {
    if (value > limit) return std::nullopt;
    return value == limit ? INT64_MIN : -static_cast<std::int64_t>(value);
  }
  if (value >= limit) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// float: [-+]?(D+(.D*)?|.D+)([eE][-+]?D+)?, finite after parsing (correctly rounded).
std::optional<double> ParseFloatText(std::string_view text) {
  std::size_t i = 0;
  const auto digits = [&]() {
    std::size_t n = 0;
    while (i < text.size() && IsDigit(text[i])) ++i, ++n;
    return n;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (digits() > 0) {
    if (i < text.size() && text[i] == '.') {
      ++i;
      digits();
    }
  } else {
    if (i >= text.size() || text[i] != '.') return std::nullopt;
    ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// string: valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  while (i < text.size()) {
    const unsigned char c = byte(i);
    std::size_t extra = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c == 0xe0) {
      extra = 2, lo = 0xa0;
    } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
      extra = 2;
    } else if (c == 0xed) {
      extra = 2, hi = 0x9f;
    } else if (c == 0xf0) {
      extra = 3, lo = 0x90;
    } else if (c >= 0xf1 && c <= 0xf3) {
      extra = 3;
    } else if (c == 0xf4) {
      extra = 3, hi = 0x8f;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // truncated
    if (byte(i + 1) < lo || byte(i + 1) > hi) return false;
    for (std::size_t k = 2; k <= extra; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return false;
    }
    i += extra + 1;
  }
  return true;
}

// A row: one value per registry key slot (null where the row has no value).
using Row = std::vector<Scalar>;

// A node's rows and the keys they have (by slot).
struct Rows {
  std::vector<bool> keys;
  std::vector<Row> rows;
};

enum class Outcome : std::uint8_t { kOk, kTimeout, kError };

struct NodeRun {
  Outcome outcome = Outcome::kOk;
  Rows rows;  // kOk
  bool stalled = false;
};

// -1, 0, 1 for two values of one type (ints exactly, floats as float64 so -0.0 == 0.0, strings
// by bytes, false before true).
int CompareValues(const Scalar& a, const Scalar& b) {
  if (std::holds_alternative<std::int64_t>(a)) {
    const std::int64_t x = std::get<std::int64_t>(a), y = std::get<std::int64_t>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (std::holds_alternative<double>(a)) {
    const double x = std::get<double>(a), y = std::get<double>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (std::holds_alternative<std::string>(a)) {
    const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  const int x = std::get<bool>(a) ? 1 : 0, y = std::get<bool>(b) ? 1 : 0;
  return x - y;
}

class Reference {
 public:
  Reference(const Plan& plan, const Registry& registry, const ParamBinding& params,
            std::optional<std::int64_t> viewer_id, MemoryStore& store)
      : plan_(plan),
        registry_(registry),
        params_(params),
        viewer_id_(viewer_id),
        store_(store),
        slots_(registry.keys().size()) {}

  ReferenceResult Run() {
    enum class Status : std::uint8_t { kNotRun, kOk, kDegraded, kFailed };
    std::vector<Status> status(plan_.nodes.size(), Status::kNotRun);
    std::vector<Rows> rows(plan_.nodes.size());
    std::vector<std::optional<std::string>> degraded(plan_.nodes.size());
    std::vector<bool> stalled(plan_.nodes.size(), false);
    ReferenceResult result;
    for (const std::size_t i : plan_.order) {
      const Node& node = plan_.nodes[i];
      std::vector<const Rows*> inputs;
      bool runs = true;
      for (const std::size_t in : node.input_index) {
        if (status[in] != Status::kOk && status[in] != Status::kDegraded) runs = false;
        inputs.push_back(&rows[in]);
      }
      if (!runs) continue;  // downstream of a failed node: never runs
      NodeRun run = RunNode(node, inputs);
      stalled[i] = run.stalled;
      if (run.outcome == Outcome::kOk) {
        status[i] = Status::kOk;
        rows[i] = std::move(run.rows);
      } else if (node.on_error == OnError::kSkip) {
        status[i] = Status::kDegraded;
        rows[i] = DegradedRows(node, inputs);
        degraded[i] = run.outcome == Outcome::kTimeout ? "timeout" : "error";
      } else {
        status[i] = Status::kFailed;
        result.error_codes.insert(run.outcome == Outcome::kTimeout ? "deadline_exceeded"
                                                                   : "upstream_error");
      }
    }
    for (std::size_t i = 0; i < plan_.nodes.size(); ++i) {
      if (stalled[i]) result.stalled.push_back(plan_.nodes[i].id);
    }
    if (!result.error_codes.empty()) {
      result.answer.error_code = *result.error_codes.begin();
      return result;
    }
    for (std::size_t i = 0; i < plan_.nodes.size(); ++i) {
      if (degraded[i]) result.answer.degraded.push_back({plan_.nodes[i].id, *degraded[i]});
    }
    for (const std::string& id : plan_.outputs) {
      std::size_t index = 0;
      while (plan_.nodes[index].id != id) ++index;
      result.answer.outputs.push_back(OutputOf(id, rows[index]));
    }
    return result;
  }

 private:
  std::size_t Slot(const std::string& key) const {
    const std::optional<std::size_t> slot = registry_.KeySlot(key);
    if (!slot) throw std::logic_error("no key " + key);
    return *slot;
  }
  ValueType TypeOf(std::size_t slot) const { return registry_.keys()[slot].type; }
  const KeySchema& Schema(const std::string& name) const {
    const KeySchema* s = registry_.FindKeySchema(name);
    if (s == nullptr) throw std::logic_error("no key schema " + name);
    return *s;
  }

  std::vector<bool> NoKeys() const { return std::vector<bool>(slots_, false); }
  Row EmptyRow() const { return Row(slots_); }
  Row RowWithId(std::int64_t id) const {
    Row r = EmptyRow();
    r[registry_.id_slot()] = id;
    return r;
  }

  // The keys a node's rows have (docs/plan-format.md, the ops table's "output keys").
  std::vector<bool> OutputKeys(const Node& node, const std::vector<const Rows*>& inputs) const {
    std::vector<bool> keys = NoKeys();
    keys[registry_.id_slot()] = true;
    const auto add_user_keys = [&]() {
      for (const std::string& k : Schema("user").yields) keys[Slot(k)] = true;
    };
    switch (node.op) {
      case Op::kViewer:
      case Op::kFollow:
      case Op::kRecommendation:
        add_user_keys();
        break;
      case Op::kMedia:
      case Op::kFetchList:
      case Op::kFixedSource:
        break;
      case Op::kConcat:
      case Op::kInsert:
        for (const Rows* in : inputs) {
          for (std::size_t s = 0; s < slots_; ++s) keys[s] = keys[s] || in->keys[s];
        }
        break;
      default:
        keys = inputs[0]->keys;
        if (node.op == Op::kFetchFeatures) {
          for (const std::string& k : node.params.keys) keys[Slot(k)] = true;
        }
        if (node.op == Op::kVm || node.op == Op::kDecay) keys[Slot(node.params.out_key)] = true;
        break;
    }
    return keys;
  }

  Rows DegradedRows(const Node& node, const std::vector<const Rows*>& inputs) const {
    Rows out;
    out.keys = OutputKeys(node, inputs);
    switch (node.op) {
      case Op::kViewer:
      case Op::kFixedSource:
      case Op::kFollow:
      case Op::kRecommendation:
      case Op::kMedia:
      case Op::kFetchList:
        return out;  // no rows
      case Op::kConcat:
      case Op::kInsert:  // keeps its finished inputs, as concat
        for (const Rows* in : inputs) {
          out.rows.insert(out.rows.end(), in->rows.begin(), in->rows.end());
        }
        return out;
      default:
        out.rows = inputs[0]->rows;  // passed through; keys it would have added stay null
        return out;
    }
  }

  // The outcome of one wave of commands on `keys`: the connection lost, else a command that
  // never gets its reply, else an error reply (the wrong type of key, an injected error, a reply
  // of the wrong shape).
  Outcome Wave(const std::vector<std::string>& keys, StoredKey::Kind wants, bool* stalled) {
    bool lost = false, stall = false, error = false;
    for (const std::string& name : keys) {
      const StoredKey* k = store_.Find(name);
      if (k == nullptr) continue;
      if (k->kind == StoredKey::Kind::kFault) {
        lost = lost || k->fault == KeyFault::kConnectionLost;
        stall = stall || k->fault == KeyFault::kStall;
        error = error || k->fault == KeyFault::kErrorReply || k->fault == KeyFault::kWrongShape;
      } else if (k->kind != wants) {
        error = true;  // WRONGTYPE
      }
    }
    if (lost) return Outcome::kError;
    if (stall) {
      *stalled = true;
      return Outcome::kTimeout;
    }
    return error ? Outcome::kError : Outcome::kOk;
  }

  // LRANGE key 0 fanout-1: the ints among the list's first `fanout` elements.
  std::vector<std::int64_t> ListIds(const std::string& name, std::int64_t fanout) {
    std::vector<std::int64_t> ids;
    const StoredKey* k = store_.Find(name);
    if (k == nullptr) return ids;
    for (std::size_t i = 0; i < k->elements.size() && static_cast<std::int64_t>(i) < fanout; ++i) {
      if (const auto id = ParseIntText(k->elements[i])) ids.push_back(*id);
    }
    return ids;
  }

  // A hash field's value for key `slot` (null: no hash, no field, or text that does not parse).
  Scalar Field(const std::string& name, const std::string& field, std::size_t slot) {
    const StoredKey* k = store_.Find(name);
    if (k == nullptr) return Scalar{};
    for (const auto& [f, value] : k->fields) {
      if (f == field) return ParseRedisValue(TypeOf(slot), value);
    }
    return Scalar{};
  }

  // HGETALL of the user schema into rows made from ids.
  NodeRun UsersOf(const std::vector<std::int64_t>& ids, std::vector<bool> keys) {
    NodeRun run;
    const KeySchema& user = Schema("user");
    std::vector<std::string> names;
    for (const std::int64_t id : ids) names.push_back(user.KeyFor(id));
    run.outcome = Wave(names, StoredKey::Kind::kHash, &run.stalled);
    if (run.outcome != Outcome::kOk) return run;
    run.rows.keys = std::move(keys);
    for (std::size_t r = 0; r < ids.size(); ++r) {
      Row row = RowWithId(ids[r]);
      for (const std::string& k : user.yields) row[Slot(k)] = Field(names[r], k, Slot(k));
      run.rows.rows.push_back(std::move(row));
    }
    return run;
  }

  // Per input row, the ids of its list (LRANGE on `schema`).
  NodeRun ListsOf(const Rows& input, const KeySchema& schema, std::int64_t fanout,
                  std::vector<std::int64_t>* ids) {
    NodeRun run;
    std::vector<std::string> names;
    for (const Row& row : input.rows) {
      names.push_back(schema.KeyFor(std::get<std::int64_t>(row[registry_.id_slot()])));
    }
    run.outcome = Wave(names, StoredKey::Kind::kList, &run.stalled);
    if (run.outcome != Outcome::kOk) return run;
    for (const std::string& name : names) {
      for (const std::int64_t id : ListIds(name, fanout)) ids->push_back(id);
    }
    return run;
  }

  // The input's rows in a CandidateSet, for the tree walk.
  CandidateSet* AsCandidates(Arena& arena, const Rows& in) const {
    CandidateSet* set = CandidateSet::Make(arena, slots_, in.rows.size());
    for (std::size_t s = 0; s < slots_; ++s) {
      if (!in.keys[s]) continue;
      Column* c = Column::Make(arena, TypeOf(s), in.rows.size());
      for (std::size_t r = 0; r < in.rows.size(); ++r) {
        const Scalar& v = in.rows[r][s];
        if (IsNull(v)) continue;
        c->set_valid(r);
        if (std::holds_alternative<std::int64_t>(v)) c->ints()[r] = std::get<std::int64_t>(v);
        if (std::holds_alternative<double>(v)) c->floats()[r] = std::get<double>(v);
        if (std::holds_alternative<bool>(v)) c->bools()[r] = std::get<bool>(v) ? 1 : 0;
        if (std::holds_alternative<std::string>(v)) {
          c->strings()[r] = StringRef::Of(arena.CopyString(std::get<std::string>(v)));
        }
      }
      set->set_column(s, c);
    }
    return set;
  }

  // take's count or topk's k: the literal, or the request's value of the int param it names.
  std::int64_t Count(std::int64_t literal, const std::string& param) const {
    if (param.empty()) return literal;
    for (std::size_t i = 0; i < plan_.params.size(); ++i) {
      if (plan_.params[i].name == param) return std::get<std::int64_t>(params_.values.at(i));
    }
    throw std::logic_error("a count from the undeclared param " + param);
  }

  NodeRun RunNode(const Node& node, const std::vector<const Rows*>& inputs) {
    const NodeParams& p = node.params;
    const std::vector<bool> keys = OutputKeys(node, inputs);
    NodeRun run;
    run.rows.keys = keys;
    switch (node.op) {
      case Op::kViewer:
        if (!viewer_id_) throw std::logic_error("a viewer plan without a viewer");
        return UsersOf({*viewer_id_}, keys);
      case Op::kFixedSource:
        for (const std::int64_t id : p.ids) run.rows.rows.push_back(RowWithId(id));
        return run;
      case Op::kFollow:
      case Op::kRecommendation: {
        std::vector<std::int64_t> ids;
        NodeRun lists =
            ListsOf(*inputs[0], Schema(node.op == Op::kFollow ? "follow" : "recommendation"),
                    p.fanout, &ids);
        if (lists.outcome != Outcome::kOk) return lists;
        return UsersOf(ids, keys);
      }
      case Op::kMedia:
      case Op::kFetchList: {
        std::vector<std::int64_t> ids;
        NodeRun lists =
            ListsOf(*inputs[0], Schema(node.op == Op::kMedia ? "media" : p.schema), p.fanout, &ids);
        if (lists.outcome != Outcome::kOk) return lists;
        for (const std::int64_t id : ids) run.rows.rows.push_back(RowWithId(id));
        return run;
      }
      case Op::kFetchFeatures: {
        const KeySchema& schema = Schema(p.schema);
        std::vector<std::string> names;
        for (const Row& row : inputs[0]->rows) {
          names.push_back(schema.KeyFor(std::get<std::int64_t>(row[registry_.id_slot()])));
        }
        run.outcome = Wave(names, StoredKey::Kind::kHash, &run.stalled);
        if (run.outcome != Outcome::kOk) return run;
        run.rows.rows = inputs[0]->rows;
        for (std::size_t r = 0; r < names.size(); ++r) {
          for (const std::string& k : p.keys) {
            run.rows.rows[r][Slot(k)] = Field(names[r], k, Slot(k));
          }
        }
        return run;
      }
      case Op::kVm: {
        const std::size_t out = Slot(p.out_key);
        run.rows.rows = inputs[0]->rows;
        if (run.rows.rows.empty()) return run;
        Arena arena;
        const CandidateSet* set = AsCandidates(arena, *inputs[0]);
        const TreeWalk walk(registry_, plan_.params, params_, *set);
        const Expr& expr = plan_.exprs.at(p.expr);
        for (std::size_t r = 0; r < run.rows.rows.size(); ++r) {
          Scalar v = walk.Eval(expr, static_cast<std::uint32_t>(r));
          if (TypeOf(out) == ValueType::kFloat && std::holds_alternative<std::int64_t>(v)) {
            v = static_cast<double>(std::get<std::int64_t>(v));
          }
          run.rows.rows[r][out] = std::move(v);
        }
        return run;
      }
      case Op::kFilter: {
        if (inputs[0]->rows.empty()) return run;
        Arena arena;
        const CandidateSet* set = AsCandidates(arena, *inputs[0]);
        const TreeWalk walk(registry_, plan_.params, params_, *set);
        const Pred& pred = plan_.preds.at(p.pred);
        for (std::size_t r = 0; r < inputs[0]->rows.size(); ++r) {
          if (walk.Truth(pred, static_cast<std::uint32_t>(r)) == TreeWalk::kTrue) {
            run.rows.rows.push_back(inputs[0]->rows[r]);
          }
        }
        return run;
      }
      case Op::kSort: {
        const std::size_t by = Slot(p.by);
        const bool desc = p.order == SortOrder::kDesc;
        run.rows.rows = inputs[0]->rows;
        std::stable_sort(run.rows.rows.begin(), run.rows.rows.end(),
                         [&](const Row& a, const Row& b) {
                           if (IsNull(a[by])) return false;  // nulls last in both orders
                           if (IsNull(b[by])) return true;
                           const int c = CompareValues(a[by], b[by]);
                           return desc ? c > 0 : c < 0;
                         });
        return run;
      }
      case Op::kTopk: {
        const std::size_t by = Slot(p.by);
        std::vector<Row> valued, nulls;
        for (const Row& row : inputs[0]->rows) (IsNull(row[by]) ? nulls : valued).push_back(row);
        std::stable_sort(valued.begin(), valued.end(), [&](const Row& a, const Row& b) {
          return CompareValues(a[by], b[by]) > 0;  // highest first, ties in input order
        });
        valued.insert(valued.end(), nulls.begin(), nulls.end());
        const std::int64_t k = Count(p.k, p.k_param);
        if (static_cast<std::int64_t>(valued.size()) > k)
          valued.resize(static_cast<std::size_t>(k));
        run.rows.rows = std::move(valued);
        return run;
      }
      case Op::kTake: {
        const std::int64_t count = Count(p.count, p.count_param);
        for (const Row& row : inputs[0]->rows) {
          if (static_cast<std::int64_t>(run.rows.rows.size()) >= count) break;
          run.rows.rows.push_back(row);
        }
        return run;
      }
      case Op::kDedupe: {
        const std::size_t by = Slot(p.by);
        std::vector<Scalar> seen;
        for (const Row& row : inputs[0]->rows) {
          bool repeat = false;
          for (const Scalar& s : seen) {
            if (IsNull(s) != IsNull(row[by])) continue;
            if (IsNull(s) || CompareValues(s, row[by]) == 0) repeat = true;
          }
          if (repeat) continue;
          seen.push_back(row[by]);
          run.rows.rows.push_back(row);
        }
        return run;
      }
      case Op::kDiversify: {
        // The rule as docs/plan-format.md states it, rank by rank: the earliest remaining row
        // whose value has fewer than max_per_window equal values among the window - 1 rows placed
        // last (a null is never limited), else the earliest remaining row.
        const std::size_t by = Slot(p.by);
        const std::size_t back = static_cast<std::size_t>(p.window) - 1;
        std::vector<Row> remaining = inputs[0]->rows;
        std::vector<Row>& placed = run.rows.rows;
        while (!remaining.empty()) {
          std::size_t pick = 0;
          for (std::size_t i = 0; i < remaining.size(); ++i) {
            const Scalar& value = remaining[i][by];
            std::int64_t equal = 0;
            for (std::size_t j = placed.size() > back ? placed.size() - back : 0;
                 j < placed.size() && !IsNull(value); ++j) {
              if (!IsNull(placed[j][by]) && CompareValues(placed[j][by], value) == 0) ++equal;
            }
            if (equal < p.max_per_window) {
              pick = i;
              break;
            }
          }
          placed.push_back(remaining[pick]);
          remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(pick));
        }
        return run;
      }
      case Op::kDecay: {
        // docs/plan-format.md, "Decay by group": by's descending order (stable, nulls last), a
        // running product per group value, then out_key's descending order.
        const std::size_t by = Slot(p.by), group = Slot(p.group), out = Slot(p.out_key);
        std::vector<Row> rows = inputs[0]->rows;
        const auto descending = [](std::size_t key) {
          return [key](const Row& a, const Row& b) {
            if (IsNull(a[key])) return false;
            if (IsNull(b[key])) return true;
            return CompareValues(a[key], b[key]) > 0;
          };
        };
        std::stable_sort(rows.begin(), rows.end(), descending(by));
        std::vector<std::pair<Scalar, double>> last;  // per group value: its last multiplier
        for (Row& row : rows) {
          double multiplier = 1.0;
          if (!IsNull(row[group])) {
            auto it = std::find_if(last.begin(), last.end(), [&](const auto& e) {
              return CompareValues(e.first, row[group]) == 0;
            });
            if (it == last.end()) {
              last.emplace_back(row[group], 1.0);
            } else {
              it->second *= p.factor;
              multiplier = it->second;
            }
          }
          if (IsNull(row[by])) {
            row[out] = Scalar{};
          } else {
            const double score = std::holds_alternative<std::int64_t>(row[by])
                                     ? static_cast<double>(std::get<std::int64_t>(row[by]))
                                     : std::get<double>(row[by]);
            row[out] = score * multiplier;
          }
        }
        std::stable_sort(rows.begin(), rows.end(), descending(out));
        run.rows.rows = std::move(rows);
        return run;
      }
      case Op::kExcludeSeen: {
        // docs/plan-format.md, "Seen items": the rows whose id, in decimal, is not a member of
        // the viewer's set; no rows send no command (so a faulty key cannot fail the node).
        if (!viewer_id_) throw std::logic_error("exclude_seen without a viewer");
        if (inputs[0]->rows.empty()) return run;
        const std::string name = Schema(p.schema).KeyFor(*viewer_id_);
        run.outcome = Wave({name}, StoredKey::Kind::kSet, &run.stalled);
        if (run.outcome != Outcome::kOk) return run;
        const StoredKey* set = store_.Find(name);
        for (const Row& row : inputs[0]->rows) {
          const std::int64_t id = std::get<std::int64_t>(row[registry_.id_slot()]);
          if (set == nullptr || !set->HasMember(std::to_string(id))) run.rows.rows.push_back(row);
        }
        return run;
      }
      case Op::kInsert: {
        // docs/plan-format.md, "Inserted rows", rank by rank.
        const std::size_t id = registry_.id_slot();
        std::vector<Row> insertable;
        std::set<std::int64_t> taken;
        for (const Row& row : inputs[0]->rows) taken.insert(std::get<std::int64_t>(row[id]));
        for (const Row& row : inputs[1]->rows) {
          if (taken.insert(std::get<std::int64_t>(row[id])).second) insertable.push_back(row);
        }
        std::size_t organic = 0, inserted = 0;
        for (std::int64_t rank = 1;; ++rank) {
          if (rank % p.every == 0 && inserted < insertable.size() &&
              static_cast<std::int64_t>(inserted) < p.max_inserted) {
            run.rows.rows.push_back(insertable[inserted++]);
          } else if (organic < inputs[0]->rows.size()) {
            run.rows.rows.push_back(inputs[0]->rows[organic++]);
          } else {
            break;
          }
        }
        return run;
      }
      case Op::kConcat:
        for (const Rows* in : inputs) {
          run.rows.rows.insert(run.rows.rows.end(), in->rows.begin(), in->rows.end());
        }
        return run;
      case Op::kSleep:
      case Op::kBusyCpu:
        if (node.timeout_ms && p.ms > *node.timeout_ms) {
          run.outcome = Outcome::kTimeout;
          return run;
        }
        run.rows.rows = inputs[0]->rows;
        return run;
    }
    throw std::logic_error("unknown op");
  }

  PlanAnswer::Output OutputOf(const std::string& id, const Rows& rows) const {
    PlanAnswer::Output out;
    out.node = id;
    std::vector<std::size_t> order = {registry_.id_slot()};
    for (std::size_t s = 0; s < slots_; ++s) {
      if (rows.keys[s] && s != registry_.id_slot()) order.push_back(s);
    }
    for (const std::size_t s : order) out.keys.push_back(registry_.keys()[s].name);
    for (const Row& row : rows.rows) {
      std::vector<Scalar> values;
      for (const std::size_t s : order) values.push_back(row[s]);
      out.rows.push_back(std::move(values));
    }
    return out;
  }

  const Plan& plan_;
  const Registry& registry_;
  const ParamBinding& params_;
  std::optional<std::int64_t> viewer_id_;
  MemoryStore& store_;
  std::size_t slots_;
};

}  // namespace

Scalar ParseRedisValue(ValueType type, std::string_view text) {
  switch (type) {
    case ValueType::kInt:
      if (const auto v = ParseIntText(text)) return *v;
      return Scalar{};
    case ValueType::kFloat:
      if (const auto v = ParseFloatText(text)) return *v;
      return Scalar{};
    case ValueType::kString:
      if (IsValidUtf8(text)) return std::string(text);
      return Scalar{};
    case ValueType::kBool:
      if (text == "1" || text == "true") return true;
      if (text == "0" || text == "false") return false;
      return Scalar{};
  }
  return Scalar{};
}

ReferenceResult RunReference(const Plan& plan, const Registry& registry, const ParamBinding& params,
                             std::optional<std::int64_t> viewer_id, MemoryStore& store) {
  return Reference(plan, registry, params, viewer_id, store).Run();
}

}  // namespace rankd::engine::testing
