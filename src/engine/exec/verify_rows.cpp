#include "exec/verify_rows.h"

#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

std::optional<std::string> VerifyRows(const CompiledNode& node, const CandidateSet& rows,
                                      const Registry& registry) {
  if (rows.slots() != registry.keys().size()) {
    return "its rows have " + std::to_string(rows.slots()) + " key slots, the registry " +
           std::to_string(registry.keys().size());
  }
  for (const KeyRef& key : node.output_keys) {
    const Column* column = rows.column(key.slot);
    const std::string& name = registry.keys()[key.slot].name;
    if (column == nullptr) return "its rows have no column for key \"" + name + "\"";
    if (column->type() != key.type) {
      return "its column for key \"" + name + "\" is " +
             WithArticle(ValueTypeName(column->type())) + ", the key " +
             WithArticle(ValueTypeName(key.type));
    }
    if (column->size() < rows.physical_rows()) {
      return "its column for key \"" + name + "\" has " + std::to_string(column->size()) +
             " rows of " + std::to_string(rows.physical_rows());
    }
  }
  if (rt::kDebugChecks && rows.selection() != nullptr) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows.selection()[i] >= rows.physical_rows()) {
        return "its selection names row " + std::to_string(rows.selection()[i]) + " of " +
               std::to_string(rows.physical_rows());
      }
    }
  }
  return std::nullopt;
}

}  // namespace rankd::engine
