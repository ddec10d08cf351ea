// A tree model over the test registry's keys (test_registry.h), for the VM's unit and differential
// tests: model "m", an XGBoost JSON model over features f1 (float), i1 (int) and b1 (bool).
// f1 < -1 or missing (default left) scores 1; else i1 < 5 scores 10; else b1 < 0.5 or missing
// scores 100, and 1000 otherwise.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine::testing {

inline constexpr std::string_view kTestModel = R"({"learner": {"feature_names": ["f1", "i1", "b1"],
  "gradient_booster": {"name": "gbtree", "model": {"trees": [{
    "left_children": [1, -1, 3, -1, 5, -1, -1], "right_children": [2, -1, 4, -1, 6, -1, -1],
    "split_indices": [0, 0, 1, 0, 2, 0, 0], "default_left": [1, 0, 0, 0, 1, 0, 0],
    "split_conditions": [-1, 1, 5, 10, 0.5, 100, 1000]}]}},
  "learner_model_param": {"base_score": "[0E0]", "num_feature": "3"},
  "objective": {"name": "binary:logitraw"}}})";

inline ModelSet TestModels(const Registry& registry) {
  auto bound = std::make_shared<BoundModel>();
  bound->name = "m";
  bound->sha256 = std::string(64, 'a');
  auto model = models::TreeModel::Parse(models::ModelFormat::kXgboostJson, kTestModel);
  if (!model) throw std::runtime_error(model.error());
  bound->model = std::move(*model);
  for (const char* key : {"f1", "i1", "b1"}) bound->feature_slots.push_back(*registry.KeySlot(key));
  ModelSet models;
  models.emplace("m", std::move(bound));
  return models;
}

}  // namespace rankd::engine::testing
