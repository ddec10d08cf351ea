// Plans built in code for the executor's tests (no artifact, no validation): nodes added one by
// one, then Build() fills what the loader would (inputs' indexes, a topological order). And the
// registry of the example plans (registry/*.toml) built by hand, with its endpoints pointed at a
// test server.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine::testing {

class PlanBuilder {
 public:
  explicit PlanBuilder(std::string name = "test") { plan_.name = std::move(name); }

  // Adds a node; returns its id.
  PlanBuilder& Add(std::string id, Op op, std::vector<std::string> inputs, NodeParams params = {},
                   OnError on_error = OnError::kFail, std::optional<int> timeout_ms = {}) {
    Node n;
    n.id = std::move(id);
    n.op = op;
    n.inputs = std::move(inputs);
    n.params = std::move(params);
    n.on_error = on_error;
    n.timeout_ms = timeout_ms;
    plan_.nodes.push_back(std::move(n));
    return *this;
  }
  PlanBuilder& Expr(std::string id, engine::Expr e) {
    plan_.exprs.emplace(std::move(id), std::move(e));
    return *this;
  }
  PlanBuilder& Pred(std::string id, engine::Pred p) {
    plan_.preds.emplace(std::move(id), std::move(p));
    return *this;
  }
  PlanBuilder& Param(PlanParam p) {
    plan_.params.push_back(std::move(p));
    return *this;
  }
  PlanBuilder& Output(std::string id) {
    plan_.outputs.push_back(std::move(id));
    return *this;
  }

  std::shared_ptr<const Plan> Build() {
    Plan p = plan_;
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) index[p.nodes[i].id] = i;
    for (Node& n : p.nodes) {
      for (const std::string& in : n.inputs) n.input_index.push_back(index.at(in));
    }
    // Nodes are added after their inputs: the artifact order is a topological order.
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      for (std::size_t in : p.nodes[i].input_index) {
        if (in >= i) throw std::logic_error("add a node after its inputs");
      }
      p.order.push_back(i);
    }
    return std::make_shared<const Plan>(std::move(p));
  }

 private:
  Plan plan_;
};

inline NodeParams Fanout(std::int64_t n) {
  NodeParams p;
  p.fanout = n;
  return p;
}

// fetch_features of `keys` from hash schema `schema`.
inline NodeParams FetchParams(std::string schema, std::vector<std::string> keys) {
  NodeParams p;
  p.schema = std::move(schema);
  p.keys = std::move(keys);
  return p;
}

// vm writing expression `expr` into `out_key`.
inline NodeParams VmParams(std::string out_key, std::string expr) {
  NodeParams p;
  p.out_key = std::move(out_key);
  p.expr = std::move(expr);
  return p;
}

// topk by `by`.
inline NodeParams TopkParams(std::string by, std::int64_t k) {
  NodeParams p;
  p.by = std::move(by);
  p.k = k;
  return p;
}

// The keys, key schemas and endpoints of registry/*.toml, both endpoints at `address`, each a
// pool of `pool_size` connections.
inline std::shared_ptr<const Registry> ExampleRegistry(const std::string& address,
                                                       int pool_size = 2) {
  std::vector<KeyDef> keys;
  std::int64_t next = 1;
  const auto key = [&](std::string name, ValueType type, bool writable = false) {
    const bool nullable = name != "id";
    keys.push_back(KeyDef{next++, std::move(name), type, nullable, writable, ""});
  };
  key("id", ValueType::kInt);
  key("country", ValueType::kString);
  key("verified", ValueType::kBool);
  key("author_id", ValueType::kInt);
  key("age_hours", ValueType::kFloat);
  key("likes", ValueType::kInt);
  key("ctr", ValueType::kFloat);
  key("title", ValueType::kString);
  key("final_score", ValueType::kFloat, true);
  EndpointTarget target;
  target.address = address;
  target.pool_size = pool_size;
  target.connect_timeout_ms = 1000;
  target.command_timeout_ms = 2000;
  std::vector<EndpointDef> endpoints = {{"graph", target, target, target},
                                        {"features", target, target, target}};
  const auto schema = [](std::string name, std::string prefix, KeySchema::Type type,
                         std::string endpoint, std::vector<std::string> yields) {
    KeySchema s;
    s.name = std::move(name);
    s.template_text = prefix + "{id}";
    s.prefix = std::move(prefix);
    s.type = type;
    s.endpoint = std::move(endpoint);
    s.yields = std::move(yields);
    return s;
  };
  std::vector<KeySchema> schemas = {
      schema("user", "user:", KeySchema::Type::kHash, "graph", {"country", "verified"}),
      schema("follow", "follow:", KeySchema::Type::kList, "graph", {"id"}),
      schema("recommendation", "recommendation:", KeySchema::Type::kList, "graph", {"id"}),
      schema("media", "media:", KeySchema::Type::kList, "graph", {"id"}),
      schema("media_features", "media_features:", KeySchema::Type::kHash, "features",
             {"author_id", "age_hours", "likes", "ctr", "title"}),
      schema("seen", "seen:", KeySchema::Type::kSet, "graph", {}),
  };
  return std::make_shared<const Registry>(std::move(keys), std::vector<ParamDef>{},
                                          std::move(endpoints), std::move(schemas),
                                          std::string(64, '0'));
}

}  // namespace rankd::engine::testing
