// BoundModel: a tree model of a plan store, bound to the registry keys its features read
// (docs/models.md, "Models in plans"). The store loads one per model its index lists; a plan's
// `model` expressions score it over the rows' values of those keys.
//
// Thread affinity: immutable once loaded; shared by pointer across threads (a store, the programs
// compiled from its plans). Ownership: owns the model.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rankd/engine/models/model_set.h"
#include "rankd/engine/models/tree_model.h"

namespace rankd::engine {

struct BoundModel {
  std::string name;
  std::string sha256;  // of the model file's bytes, 64 lowercase hex digits
  models::TreeModel model;
  // The registry key slot each feature reads, in the model's feature order.
  std::vector<std::size_t> feature_slots;
};

}  // namespace rankd::engine
