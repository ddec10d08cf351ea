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
#include "plan/op_table.h"
#include "schema/plan_schema_text.h"

namespace rankd::engine::ops {
namespace {

json::Value Schema() { return *json::Parse(PlanSchemaText()); }

std::string TypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "integer";
    case ParamType::kFloat:
      return "number";
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
        // An int a plan may give as a declared param: the integer, or a param_ref.
        const json::Value* one_of = property->Find("oneOf");
        EXPECT_EQ(one_of != nullptr, p.from_param != nullptr);
        if (one_of != nullptr) {
          ASSERT_EQ(one_of->array().size(), 2u);
          EXPECT_EQ(one_of->array()[1].Find("$ref")->string(), "#/definitions/param_ref");
          EXPECT_NE(p.value, nullptr);
          property = &one_of->array()[0];
        }
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
        if (p.type == ParamType::kFloat) {
          EXPECT_EQ(property->Find("minimum")->number(), p.float_min);
          EXPECT_EQ(property->Find("maximum")->number(), p.float_max);
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

// take's count and topk's k may name a declared int param: ReadNodeParams keeps its name and
// leaves the value for the validator (which sets the param's max); a literal is read as before.
// chunks(in, 512): exclude_seen sends its ids 512 a command.
TEST(OpTableTest, ExcludeSeenCountsACommandPerChunkOfIds) {
  const OpSpec& op = OpSpecOf(Op::kExcludeSeen);
  const auto commands = [&](std::uint64_t rows) {
    return op.cost(std::vector<std::uint64_t>{rows}, NodeParams{}).redis_commands;
  };
  EXPECT_EQ(commands(0), 0u);
  EXPECT_EQ(commands(1), 1u);
  EXPECT_EQ(commands(512), 1u);
  EXPECT_EQ(commands(513), 2u);
  EXPECT_EQ(commands(std::numeric_limits<std::uint64_t>::max()),
            std::numeric_limits<std::uint64_t>::max() / 512 + 1);
  EXPECT_EQ(op.cost(std::vector<std::uint64_t>{700}, NodeParams{}).rows, 700u);
  EXPECT_TRUE(op.reads_viewer_id);
  EXPECT_EQ(op.removal, RemovalRule::kSeen);
}

TEST(OpTableTest, ReadsAnIntGivenAsAParam) {
  const NodeParams top = ReadNodeParams(
      OpSpecOf(Op::kTopk), *json::Parse(R"({"by": "final_score", "k": {"param": "result_size"}})"));
  EXPECT_EQ(top.by, "final_score");
  EXPECT_EQ(top.k_param, "result_size");
  EXPECT_EQ(top.k, 0);
  const NodeParams take =
      ReadNodeParams(OpSpecOf(Op::kTake), *json::Parse(R"({"count": {"param": "result_size"}})"));
  EXPECT_EQ(take.count_param, "result_size");
  EXPECT_EQ(take.count, 0);
  const NodeParams literal =
      ReadNodeParams(OpSpecOf(Op::kTopk), *json::Parse(R"({"by": "final_score", "k": 25})"));
  EXPECT_EQ(literal.k, 25);
  EXPECT_TRUE(literal.k_param.empty());
  // Only take's count and topk's k take a param.
  for (const OpSpec& op : AllOps()) {
    for (const ParamSpec& p : op.params) {
      const bool may =
          (op.op == Op::kTake && p.name == "count") || (op.op == Op::kTopk && p.name == "k");
      EXPECT_EQ(p.from_param != nullptr, may) << op.name << " " << p.name;
    }
  }
}

// How each op runs and degrades, as docs/plan-format.md's "Failure policy" states it: sources and
// the ops that make new candidates from their input yield no rows, concat keeps its finished
// inputs, every other op passes its input on; an op sends Redis commands exactly when it reads a
// key schema. (That its run function is of its execution's kind: op_runs_test.cpp.)
TEST(OpTableTest, EveryOpSaysHowItRunsAndDegrades) {
  for (const OpSpec& op : AllOps()) {
    SCOPED_TRACE(std::string(op.name));
    const bool reads_redis =
        op.reads_list.present() || op.reads_hash.present() || op.reads_set.present();
    EXPECT_EQ(op.execution == Execution::kRedisSource, reads_redis);
    if (op.inputs.max == 0 || op.reads_list.present()) {
      EXPECT_EQ(op.degrade, DegradeRule::kNoRows);
    } else if (op.inputs.max == 2) {
      EXPECT_EQ(op.degrade, DegradeRule::kKeepFinishedInputs);
    } else {
      EXPECT_EQ(op.degrade, DegradeRule::kPassInput);
      EXPECT_TRUE(op.output.keep_input_keys);  // what it passes on has the keys it promises
    }
  }
  EXPECT_EQ(OpSpecOf(Op::kBusyCpu).execution, Execution::kHeavyCpu);
  EXPECT_EQ(OpSpecOf(Op::kSleep).execution, Execution::kWait);
}

TEST(OpTableTest, OutputKeyNamesFollowTheOutputRule) {
  const std::set<std::string> input = {"id", "likes"};
  const std::vector<const std::set<std::string>*> inputs = {&input};
  NodeParams vm;
  vm.out_key = "final_score";
  EXPECT_EQ(OutputKeyNames(OpSpecOf(Op::kVm), vm, inputs, nullptr),
            (std::set<std::string>{"id", "likes", "final_score"}));
  NodeParams features;
  features.keys = {"ctr", "title"};
  EXPECT_EQ(OutputKeyNames(OpSpecOf(Op::kFetchFeatures), features, inputs, nullptr),
            (std::set<std::string>{"id", "likes", "ctr", "title"}));
  KeySchema user;
  user.yields = {"country", "verified"};
  EXPECT_EQ(OutputKeyNames(OpSpecOf(Op::kFollow), NodeParams{}, inputs, &user),
            (std::set<std::string>{"id", "country", "verified"}));
  EXPECT_EQ(OutputKeyNames(OpSpecOf(Op::kMedia), NodeParams{}, inputs, nullptr),
            (std::set<std::string>{"id"}));
  const std::set<std::string> other = {"id", "title"};
  const std::vector<const std::set<std::string>*> two = {&input, &other};
  EXPECT_EQ(OutputKeyNames(OpSpecOf(Op::kConcat), NodeParams{}, two, nullptr),
            (std::set<std::string>{"id", "likes", "title"}));
  NodeParams list;
  list.schema = "media";
  EXPECT_EQ(SchemaName(OpSpecOf(Op::kFetchList).reads_list, list), "media");
  EXPECT_EQ(SchemaName(OpSpecOf(Op::kFollow).reads_list, list), "follow");
}

}  // namespace
}  // namespace rankd::engine::ops
