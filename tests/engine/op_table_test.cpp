// The op table against the plan schema's op clauses (built into the engine): the same ops in the
// same order, each with the schema's arity and params (names, required, bounds, enums), as
// dsl/test/ops.test.ts checks rankc's table.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "json/parser.h"
#include "json/pointer.h"
#include "ops/op_table.h"
#include "schema/plan_schema_text.h"

namespace rankd::engine::ops {
namespace {

json::Value Schema() { return *json::Parse(PlanSchemaText()); }

std::string TypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "integer";
    case ParamType::kIntList:
    case ParamType::kKeyList:
      return "array";
    default:
      return "string";
  }
}

TEST(OpTableTest, HasTheSchemasOpsInOrder) {
  const json::Value schema = Schema();
  const json::Value& names = *json::ResolvePointer(schema, "/definitions/node/properties/op/enum");
  ASSERT_EQ(names.array().size(), AllOps().size());
  for (std::size_t i = 0; i < AllOps().size(); ++i) {
    EXPECT_EQ(AllOps()[i].name, names.array()[i].string());
    EXPECT_EQ(static_cast<std::size_t>(AllOps()[i].op), i);
    EXPECT_EQ(&OpSpecOf(AllOps()[i].op), &AllOps()[i]);
    EXPECT_EQ(FindOp(AllOps()[i].name), &AllOps()[i]);
    EXPECT_EQ(OpName(AllOps()[i].op), AllOps()[i].name);
  }
  EXPECT_EQ(FindOp("teleport"), nullptr);
  EXPECT_EQ(FindOp("constructor"), nullptr);
}

TEST(OpTableTest, AgreesWithTheSchemasOpClauses) {
  const json::Value schema = Schema();
  std::set<std::string> covered;
  for (const json::Value& clause :
       json::ResolvePointer(schema, "/definitions/node/allOf")->array()) {
    const json::Value& then = *clause.Find("then")->Find("properties");
    const json::Value& inputs = *then.Find("inputs");
    const json::Value& params = *then.Find("params");
    for (const json::Value& op_name :
         json::ResolvePointer(clause, "/if/properties/op/enum")->array()) {
      SCOPED_TRACE(op_name.string());
      const OpSpec* op = FindOp(op_name.string());
      ASSERT_NE(op, nullptr);
      covered.insert(op_name.string());
      EXPECT_EQ(op->inputs.min, inputs.Find("minItems")->number());
      EXPECT_EQ(op->inputs.max, inputs.Find("maxItems")->number());
      EXPECT_FALSE(params.Find("additionalProperties")->bool_value());
      const json::Value::Object& properties = params.Find("properties")->object();
      ASSERT_EQ(properties.size(), op->params.size());
      std::set<std::string> required;
      for (const json::Value& r : params.Find("required")->array()) required.insert(r.string());
      for (const ParamSpec& p : op->params) {
        SCOPED_TRACE(std::string(p.name));
        const json::Value* property = params.Find("properties")->Find(p.name);
        ASSERT_NE(property, nullptr);
        EXPECT_EQ(p.required, required.count(std::string(p.name)) == 1);
        if (p.type == ParamType::kEnum) {
          const json::Value::Array& values = property->Find("enum")->array();
          ASSERT_EQ(values.size(), p.values.size());
          for (std::size_t i = 0; i < values.size(); ++i)
            EXPECT_EQ(values[i].string(), p.values[i]);
          continue;
        }
        const json::Value* type = property->Find("type");
        if (type != nullptr) {
          EXPECT_EQ(type->string(), TypeName(p.type));
        }
        if (p.type == ParamType::kInt) {
          EXPECT_EQ(property->Find("minimum")->number(), p.min);
          EXPECT_EQ(property->Find("maximum")->number(), p.max);
        }
        if (p.type == ParamType::kIntList || p.type == ParamType::kKeyList) {
          EXPECT_EQ(property->Find("minItems")->number(), p.min);
          EXPECT_EQ(property->Find("maxItems")->number(), p.max);
          EXPECT_EQ(property->Find("uniqueItems") != nullptr, p.type == ParamType::kKeyList);
        }
      }
    }
  }
  EXPECT_EQ(covered.size(), AllOps().size());
}

TEST(OpTableTest, CostsSaturate) {
  const NodeParams fanout = [] {
    NodeParams p;
    p.fanout = 10'000;
    return p;
  }();
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() / 2;
  const NodeCost follow = OpSpecOf(Op::kFollow).cost(std::vector<std::uint64_t>{huge}, fanout);
  EXPECT_EQ(follow.rows, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(follow.redis_commands, std::numeric_limits<std::uint64_t>::max());
  const NodeCost concat =
      OpSpecOf(Op::kConcat).cost(std::vector<std::uint64_t>{huge, huge + 2}, NodeParams{});
  EXPECT_EQ(concat.rows, std::numeric_limits<std::uint64_t>::max());
  const NodeCost viewer = OpSpecOf(Op::kViewer).cost({}, NodeParams{});
  EXPECT_EQ(viewer.rows, 1u);
  EXPECT_EQ(viewer.redis_commands, 1u);
  NodeParams take;
  take.count = 7;
  EXPECT_EQ(OpSpecOf(Op::kTake).cost(std::vector<std::uint64_t>{100}, take).rows, 7u);
}

}  // namespace
}  // namespace rankd::engine::ops
