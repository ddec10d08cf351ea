// The registry of the reference executor's tests and the plan fuzzer, built in code: the keys of
// the engine's test registry (test_registry.h: id, i1, i2, f1, f2, s1, s2, b1 and the writable
// out_f, out_i, out_s, out_b), its params, and key schemas on two endpoints, `graph` and
// `features`:
//
//   user            hash  graph     i2, s1, b1           (viewer, follow, recommendation)
//   follow          list  graph                          (follow)
//   recommendation  list  graph                          (recommendation)
//   media           list  graph                          (media)
//   related         list  features                       (fetch_list)
//   feat            hash  features  i1, f1, f2, s2, b1   (fetch_features)
//   stats           hash  graph     i1, i2, f2, s1       (fetch_features)
//
// The endpoints' addresses are never used: tests give MemoryEndpoints of these names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rankd/engine/registry/registry.h"
#include "test_registry.h"

namespace rankd::engine::testing {

inline std::shared_ptr<const Registry> PlanCaseRegistry() {
  const std::shared_ptr<const Registry> base = TestRegistry();
  EndpointTarget target;
  target.address = "127.0.0.1:1";
  std::vector<EndpointDef> endpoints = {{"features", target, target, target},
                                        {"graph", target, target, target}};
  const auto schema = [](std::string name, KeySchema::Type type, std::string endpoint,
                         std::vector<std::string> yields) {
    KeySchema s;
    s.prefix = name + ":";
    s.template_text = s.prefix + "{id}";
    s.name = std::move(name);
    s.type = type;
    s.endpoint = std::move(endpoint);
    s.yields = std::move(yields);
    return s;
  };
  using T = KeySchema::Type;
  std::vector<KeySchema> schemas = {
      schema("user", T::kHash, "graph", {"i2", "s1", "b1"}),
      schema("follow", T::kList, "graph", {"id"}),
      schema("recommendation", T::kList, "graph", {"id"}),
      schema("media", T::kList, "graph", {"id"}),
      schema("related", T::kList, "features", {"id"}),
      schema("feat", T::kHash, "features", {"i1", "f1", "f2", "s2", "b1"}),
      schema("stats", T::kHash, "graph", {"i1", "i2", "f2", "s1"}),
      schema("seen", T::kSet, "graph", {}),
  };
  std::vector<ParamDef> params;
  for (const PlanParam& p : TestParams()) {
    params.push_back(ParamDef{p.name, p.type, p.default_value, p.min, p.max, p.max_bytes, ""});
  }
  return std::make_shared<const Registry>(base->keys(), std::move(params), std::move(endpoints),
                                          std::move(schemas), std::string(64, '0'));
}

}  // namespace rankd::engine::testing
