// A registry and candidate sets for the engine's unit tests: keys of every type, params of every
// type, built directly (no TOML), and helpers that make columns from lists of optional values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine::testing {

// Keys: id, i1, i2 (int), f1, f2 (float), s1, s2 (string), b1 (bool), out_f (float, writable),
// out_i (int, writable), out_s (string, writable), out_b (bool, writable).
inline std::shared_ptr<const Registry> TestRegistry() {
  std::vector<KeyDef> keys;
  std::int64_t next = 1;
  const auto key = [&](std::string name, ValueType type, bool writable = false) {
    const bool nullable = name != "id";
    keys.push_back(KeyDef{next++, std::move(name), type, nullable, writable, ""});
  };
  key("id", ValueType::kInt);
  key("i1", ValueType::kInt);
  key("i2", ValueType::kInt);
  key("f1", ValueType::kFloat);
  key("f2", ValueType::kFloat);
  key("s1", ValueType::kString);
  key("s2", ValueType::kString);
  key("b1", ValueType::kBool);
  key("out_f", ValueType::kFloat, true);
  key("out_i", ValueType::kInt, true);
  key("out_s", ValueType::kString, true);
  key("out_b", ValueType::kBool, true);
  return std::make_shared<const Registry>(std::move(keys), std::vector<ParamDef>{},
                                          std::vector<EndpointDef>{}, std::vector<KeySchema>{},
                                          std::string(64, '0'));
}

// Params: pi (int), pf (float), ps (string), pb (bool), pk (int 1..10, a row count).
inline std::vector<PlanParam> TestParams() {
  return {PlanParam{"pb", ValueType::kBool, true, std::nullopt, std::nullopt, std::nullopt},
          PlanParam{"pf", ValueType::kFloat, 0.5, -100.0, 100.0, std::nullopt},
          PlanParam{"pi", ValueType::kInt, std::int64_t{3}, -100.0, 100.0, std::nullopt},
          PlanParam{"ps", ValueType::kString, std::string("a.c"), std::nullopt, std::nullopt,
                    std::nullopt},
          // A row count: bounded within take's and topk's ranges, so either may read it.
          PlanParam{"pk", ValueType::kInt, std::int64_t{3}, 1.0, 10.0, std::nullopt}};
}

template <class T>
Column* ColumnOf(Arena& arena, ValueType type, const std::vector<std::optional<T>>& values) {
  Column* c = Column::Make(arena, type, values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    c->set_valid(i);
    if constexpr (std::is_same_v<T, std::int64_t>) {
      c->ints()[i] = *values[i];
    } else if constexpr (std::is_same_v<T, double>) {
      c->floats()[i] = *values[i];
    } else if constexpr (std::is_same_v<T, bool>) {
      c->bools()[i] = *values[i] ? 1 : 0;
    } else {
      c->strings()[i] = StringRef::Of(arena.CopyString(*values[i]));
    }
  }
  return c;
}

inline Column* Ints(Arena& a, const std::vector<std::optional<std::int64_t>>& v) {
  return ColumnOf(a, ValueType::kInt, v);
}
inline Column* Floats(Arena& a, const std::vector<std::optional<double>>& v) {
  return ColumnOf(a, ValueType::kFloat, v);
}
inline Column* Strings(Arena& a, const std::vector<std::optional<std::string>>& v) {
  return ColumnOf(a, ValueType::kString, v);
}
inline Column* Bools(Arena& a, const std::vector<std::optional<bool>>& v) {
  return ColumnOf(a, ValueType::kBool, v);
}

// A set of `rows` rows with ids 1..rows and no other column.
inline CandidateSet* Rows(Arena& arena, const Registry& registry, std::size_t rows) {
  CandidateSet* set = CandidateSet::Make(arena, registry.keys().size(), rows);
  std::vector<std::optional<std::int64_t>> ids;
  for (std::size_t i = 0; i < rows; ++i) ids.push_back(static_cast<std::int64_t>(i + 1));
  set->set_column(registry.id_slot(), Ints(arena, ids));
  return set;
}

inline std::size_t Slot(const Registry& registry, std::string_view key) {
  return *registry.KeySlot(key);
}

// The ids of a set's logical rows, in order.
inline std::vector<std::int64_t> Ids(const CandidateSet& set, const Registry& registry) {
  std::vector<std::int64_t> ids;
  const Column* c = set.column(registry.id_slot());
  for (std::size_t i = 0; i < set.size(); ++i) ids.push_back(c->ints()[set.row(i)]);
  return ids;
}

}  // namespace rankd::engine::testing
