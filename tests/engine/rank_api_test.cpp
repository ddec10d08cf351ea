// The ranking API without Redis or a process: ParseRankRequest (every field rule and the message
// naming the field), BindParams (every param rule), WriteRankResponse and WriteErrorBody (the
// JSON forms of docs/engine.md), and the Ranker end to end on plans with no Redis nodes.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "expr_builders.h"
#include "plan_builder.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/api/ranker.h"
#include "rankd/engine/api/request_ids.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "vm/regex_cache.h"

namespace rankd::engine {
namespace {

using testing::P;
using testing::PlanBuilder;
using testing::X;

// The request, or a failure naming what ParseRankRequest said.
RankRequest Parsed(std::string_view body) {
  std::expected<RankRequest, RankError> r = ParseRankRequest(body);
  EXPECT_TRUE(r) << body << ": " << (r ? "" : r.error().message);
  return r ? *r : RankRequest{};
}

// The bad_request message for `body` (empty, and a test failure, when it parses).
std::string Refusal(std::string_view body) {
  std::expected<RankRequest, RankError> r = ParseRankRequest(body);
  if (r) {
    ADD_FAILURE() << body << " parsed";
    return "";
  }
  EXPECT_EQ(r.error().code, ErrorCode::kBadRequest) << body;
  return r.error().message;
}

TEST(ParseRankRequestTest, ReadsEveryField) {
  const RankRequest r = Parsed(
      R"({"plan":"feed","viewer_id":9223372036854775807,"params":{"w":2,"f":0.5,"s":"x","b":true},
          "deadline_ms":60000,"explain":true,"capture":true,"request_id":"r-1"})");
  EXPECT_EQ(r.plan, "feed");
  EXPECT_EQ(r.viewer_id, std::numeric_limits<std::int64_t>::max());  // every digit kept
  ASSERT_EQ(r.params.size(), 4u);
  EXPECT_EQ(r.params[0].value, Scalar(std::int64_t{2}));
  EXPECT_EQ(r.params[1].value, Scalar(0.5));
  EXPECT_EQ(r.params[2].value, Scalar(std::string("x")));
  EXPECT_EQ(r.params[3].value, Scalar(true));
  EXPECT_EQ(r.deadline_ms, 60000);
  EXPECT_TRUE(r.explain);
  EXPECT_TRUE(r.capture);
  EXPECT_EQ(r.request_id, "r-1");
  const RankRequest minimal = Parsed(R"({"plan":"p"})");
  EXPECT_EQ(minimal.surface, "");
  const RankRequest on_surface = Parsed(R"({"surface":"home","viewer_id":7})");
  EXPECT_EQ(on_surface.surface, "home");
  EXPECT_EQ(on_surface.plan, "");
  EXPECT_EQ(on_surface.viewer_id, 7);
  EXPECT_FALSE(minimal.viewer_id);
  EXPECT_FALSE(minimal.deadline_ms);
  EXPECT_FALSE(minimal.explain);
  EXPECT_FALSE(minimal.capture);
  EXPECT_FALSE(minimal.request_id);
}

TEST(ParseRankRequestTest, EveryMalformedFieldIsABadRequestNamingIt) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {R"({"plan":"feed",)", "byte 15"},
      {"", "byte 0"},
      {"[1]", "must be a JSON object, not an array"},
      {R"({"viewer_id":1})", "plan or surface is required"},
      {R"({"plan":""})", "plan must be"},
      {R"({"plan":5})", "plan must be"},
      {R"({"plan":"p","viewer_id":-1})", "viewer_id must be an integer from 0"},
      {R"({"plan":"p","viewer_id":1.5})", "viewer_id"},
      {R"({"plan":"p","viewer_id":1.0})", "viewer_id"},
      {R"({"plan":"p","viewer_id":9223372036854775808})", "viewer_id"},
      {R"({"plan":"p","viewer_id":"1"})",
       "viewer_id must be an integer from 0 to "
       "9223372036854775807, not a string"},
      {R"({"plan":"p","deadline_ms":0})", "deadline_ms must be an integer from 1 to 60000"},
      {R"({"plan":"p","deadline_ms":60001})", "deadline_ms"},
      {R"({"plan":"p","explain":1})", "explain must be true or false, not a number"},
      {R"({"plan":"p","capture":"yes"})", "capture must be true or false, not a string"},
      {R"({"plan":"p","request_id":7})", "request_id must be a string, not a number"},
      {R"({"plan":"p","explain":{}})", "explain must be true or false, not an object"},
      {R"({"plan":"p","request_id":[]})", "request_id must be a string, not an array"},
      {R"({"plan":"p","params":[]})", "params must be an object of param values, not an array"},
      {R"({"plan":"p","colour":1})", "unknown field \"colour\""},
      {R"({"plan":"p","plan":"p"})", "already has a member"},
      {R"({"plan":"p","viewer_id":1e999})", "float64"},
      {R"({"plan":"p","surface":"home"})", "plan and surface are exclusive"},
      {R"({"surface":""})", "surface must be a surface's name"},
      {R"({"surface":["home"]})", "surface must be a surface's name"},
  };
  for (const auto& [body, needle] : cases) {
    const std::string message = Refusal(body);
    EXPECT_NE(message.find(needle), std::string::npos) << body << " -> " << message;
  }
}

TEST(ParseRankRequestTest, ARequestIdIsAtMost128BytesOfPrintableAscii) {
  const std::string longest(request_fields::kRequestId.max_bytes, '~');
  EXPECT_EQ(Parsed(R"({"plan":"p","request_id":")" + longest + "\"}").request_id, longest);
  EXPECT_EQ(Parsed(R"({"plan":"p","request_id":" !az~"})").request_id, " !az~");
  EXPECT_EQ(Parsed(R"({"plan":"p","request_id":""})").request_id, "");
  EXPECT_EQ(Refusal(R"({"plan":"p","request_id":")" + longest + "x\"}"),
            "request_id must be at most 128 bytes, not 129");
  EXPECT_EQ(Refusal(R"({"plan":"p","request_id":"a\tb"})"),
            "request_id must be printable ASCII (0x20 to 0x7E); byte 1 is 0x09");
  EXPECT_EQ(Refusal(R"({"plan":"p","request_id":"\u007f"})"),
            "request_id must be printable ASCII (0x20 to 0x7E); byte 0 is 0x7F");
  EXPECT_EQ(Refusal(R"({"plan":"p","request_id":"caf\u00e9"})"),
            "request_id must be printable ASCII (0x20 to 0x7E); byte 3 is 0xC3");
  EXPECT_EQ(Refusal(R"({"plan":"p","request_id":"\u0000"})"),
            "request_id must be printable ASCII (0x20 to 0x7E); byte 0 is 0x00");
  // A huge id is refused by its size, and the message does not echo it.
  const std::string huge(470'000, 'a');
  const std::string message = Refusal(R"({"plan":"p","request_id":")" + huge + "\"}");
  EXPECT_LT(message.size(), 100u) << message.substr(0, 100);
}

// A plan of no Redis nodes with one param of each type and a regex param used with two flag sets.
std::shared_ptr<const Plan> ParamPlanSpec() {
  NodeParams ids;
  ids.ids = {3, 1, 2};
  const auto param = [](std::string name, ValueType type, Scalar value,
                        std::optional<double> min = {}, std::optional<double> max = {},
                        std::optional<std::int64_t> max_bytes = {}) {
    return PlanParam{std::move(name), type, std::move(value), min, max, max_bytes};
  };
  return PlanBuilder("params")
      .Param(param("flag", ValueType::kBool, false))
      .Param(param("limit", ValueType::kInt, std::int64_t{5}, 1, 10))
      .Param(param("pattern", ValueType::kString, std::string("^clip"), {}, {}, 64))
      .Param(param("weight", ValueType::kFloat, 0.5, 0, 100))
      .Add("ids", Op::kFixedSource, {}, ids)
      .Expr("e0", X::If(P::Or({P::RegexParam(X::Str("Clip"), "pattern", "i"),
                               P::RegexParam(X::Str("clip"), "pattern", "s")}),
                        X::Param("weight"), X::Float(0)))
      .Add("score", Op::kVm, {"ids"}, testing::VmParams("final_score", "e0"))
      .Output("score")
      .Build();
}

std::shared_ptr<const CompiledPlan> ParamPlan() {
  static const std::shared_ptr<const Registry> registry = testing::ExampleRegistry("127.0.0.1:1");
  return CompilePlan(ParamPlanSpec(), registry);
}

RequestParam Override(std::string name, Scalar value, std::string json_type) {
  return RequestParam{std::move(name), std::move(value), std::move(json_type)};
}

std::string BindRefusal(const CompiledPlan& plan, RequestParam o) {
  std::expected<ParamBinding, RankError> r = BindParams(plan, {std::move(o)});
  if (r) {
    ADD_FAILURE() << "bound";
    return "";
  }
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidParam);
  return r.error().message;
}

TEST(BindParamsTest, OverridesOfTheDeclaredTypeWithinBoundsReplaceTheDefaults) {
  const auto plan = ParamPlan();
  std::expected<ParamBinding, RankError> defaults = BindParams(*plan, {});
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->values[1], Scalar(std::int64_t{5}));
  std::expected<ParamBinding, RankError> bound = BindParams(
      *plan,
      {Override("weight", std::int64_t{3}, "number"), Override("limit", std::int64_t{10}, "number"),
       Override("flag", true, "boolean"), Override("pattern", std::string("x+"), "string")});
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(bound->values[0], Scalar(true));
  EXPECT_EQ(bound->values[1], Scalar(std::int64_t{10}));
  EXPECT_EQ(bound->values[2], Scalar(std::string("x+")));
  EXPECT_EQ(bound->values[3], Scalar(3.0));  // an integer for a float param is a float
}

TEST(BindParamsTest, EveryBadOverrideIsAnInvalidParamNamingIt) {
  const auto plan = ParamPlan();
  EXPECT_EQ(BindRefusal(*plan, Override("colour", 1.0, "number")),
            "plan params has no param \"colour\"");
  EXPECT_EQ(BindRefusal(*plan, Override("limit", 5.0, "number")),
            "param limit is an int: expected an integer, got a number with a fraction or exponent");
  EXPECT_EQ(BindRefusal(*plan, Override("limit", std::string("5"), "string")),
            "param limit is an int: expected an integer, got a string");
  EXPECT_EQ(BindRefusal(*plan, Override("limit", std::int64_t{11}, "number")),
            "param limit must be >= 1 and <= 10");
  EXPECT_EQ(BindRefusal(*plan, Override("limit", std::int64_t{0}, "number")),
            "param limit must be >= 1 and <= 10");
  EXPECT_EQ(BindRefusal(*plan, Override("weight", -0.5, "number")),
            "param weight must be >= 0 and <= 100");
  EXPECT_EQ(BindRefusal(*plan, Override("weight", true, "boolean")),
            "param weight is a float: expected a number, got a boolean");
  EXPECT_EQ(BindRefusal(*plan, Override("flag", std::int64_t{1}, "number")),
            "param flag is a bool: expected true or false, got a number");
  EXPECT_EQ(BindRefusal(*plan, Override("pattern", Scalar{}, "null")),
            "param pattern is a string: expected a string, got a null");
  const std::string regex = BindRefusal(*plan, Override("pattern", std::string("("), "string"));
  EXPECT_EQ(regex.rfind("param pattern is not a valid RE2 pattern: ", 0), 0u) << regex;
}

TEST(BindParamsTest, AStringOverItsMaxBytesIsRefusedBeforeItIsCompiled) {
  const auto plan = ParamPlan();
  const std::string fits(64, 'a');
  EXPECT_TRUE(BindParams(*plan, {Override("pattern", fits, "string")}));
  // Bytes of UTF-8, not characters: 33 two-byte letters are 66 bytes.
  std::string wide;
  for (int i = 0; i < 33; ++i) wide += "\xc3\xa9";
  EXPECT_EQ(BindRefusal(*plan, Override("pattern", wide, "string")),
            "param pattern must be at most 64 bytes, got 66");
  const std::string long_pattern = "bind-params-test-long-" + std::string(60, 'b');
  EXPECT_TRUE(
      UncompiledParamPatterns(*plan, {Override("pattern", long_pattern, "string")}).empty());
  EXPECT_EQ(BindRefusal(*plan, Override("pattern", long_pattern, "string")),
            "param pattern must be at most 64 bytes, got 82");
}

TEST(BindParamsTest, APatternOverRe2sMemoryBoundIsAnInvalidParam) {
  EXPECT_EQ(BindRefusal(*ParamPlan(), Override("pattern", std::string("\\pL{400}"), "string")),
            "param pattern is not a valid RE2 pattern: pattern too large - compile failed");
}

TEST(BindParamsTest, ListsThePatternsItWouldCompileOncePerFlagSet) {
  const auto plan = ParamPlan();
  const std::string fresh = "bind-params-test-[a-z]+";
  const std::vector<RequestParam> overrides = {
      Override("pattern", fresh, "string"), Override("weight", 1.0, "number"),
      Override("colour", std::string("x"), "string")};  // not a param: BindParams refuses it
  std::vector<ParamPattern> todo = UncompiledParamPatterns(*plan, overrides);
  ASSERT_EQ(todo.size(), 2u);
  EXPECT_EQ(todo[0].pattern, fresh);
  EXPECT_EQ(todo[0].flags + "," + todo[1].flags, "i,s");
  CompileParamPatterns(todo);
  EXPECT_TRUE(UncompiledParamPatterns(*plan, overrides).empty());
  // A refused pattern is kept too: BindParams reports it without compiling it again.
  const std::vector<RequestParam> broken = {Override("pattern", std::string("(("), "string")};
  CompileParamPatterns(UncompiledParamPatterns(*plan, broken));
  EXPECT_TRUE(UncompiledParamPatterns(*plan, broken).empty());
  EXPECT_EQ(BindParams(*plan, broken).error().code, ErrorCode::kInvalidParam);
}

TEST(CompiledPlanTest, KnowsEachParamsRegexFlagsAndWhetherItReadsTheViewer) {
  const auto plan = ParamPlan();
  EXPECT_FALSE(plan->reads_viewer());
  ASSERT_EQ(plan->regex_flags().size(), 4u);
  EXPECT_TRUE(plan->regex_flags()[0].empty());
  EXPECT_EQ(plan->regex_flags()[2], (std::vector<std::string>{"i", "s"}));
}

TEST(RequestIdsTest, MadeIdsShareAProcessPrefixAndNeverRepeat) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(NextRequestId());
  EXPECT_EQ(ids.size(), 1000u);
  const std::string id = *ids.begin();
  ASSERT_EQ(id.size() > 19, true) << id;
  EXPECT_EQ(id.substr(0, 6), "rankd-");
  for (const std::string& other : ids) EXPECT_EQ(other.substr(0, 19), id.substr(0, 19)) << other;
  EXPECT_EQ(id.substr(0, 19).find_first_not_of("rankd-0123456789abcdef"), std::string::npos);
  EXPECT_EQ(RequestIdProblem(id, "request_id"), std::nullopt);
}

TEST(RequestIdsTest, TraceIdOfReadsAW3CTraceparent) {
  EXPECT_EQ(TraceIdOf("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  for (const std::string_view bad :
       {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // an unknown version
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // an all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // an all-zero parent
        "00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01"}) {
    EXPECT_EQ(TraceIdOf(bad), std::nullopt) << bad;
  }
}

TEST(WriteErrorBodyTest, WritesTheCodesWireNameWithOrWithoutARequestId) {
  std::string with;
  WriteErrorBody(with, "r\"1", {ErrorCode::kUpstreamError, "node a: lost"});
  EXPECT_EQ(with,
            R"({"request_id":"r\"1","error":{"code":"upstream_error","message":"node a: lost"}})");
  std::string without;
  WriteErrorBody(without, std::nullopt, {ErrorCode::kForbidden, "no"});
  EXPECT_EQ(without, R"({"error":{"code":"forbidden","message":"no"}})");
}

// Runs one request through a Ranker over `store`, with no endpoints.
Ranker::Answer Rank(std::shared_ptr<const CompiledPlanStore> store, std::string_view body) {
  rt::EventLoop loop;
  return loop.RunUntilComplete(
      [](std::shared_ptr<const CompiledPlanStore> s, std::string b) -> rt::Task<Ranker::Answer> {
        EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
        Ranker ranker(std::move(s), endpoints, RankerOptions{});
        co_return co_await ranker.Rank(b);
      }(std::move(store), std::string(body)));
}

std::shared_ptr<const CompiledPlanStore> StoreOf(std::vector<std::shared_ptr<const Plan>> plans) {
  const std::shared_ptr<const Registry> registry = testing::ExampleRegistry("127.0.0.1:1");
  std::map<std::string, std::shared_ptr<const Plan>> by_name;
  for (auto& p : plans) by_name.emplace(p->name, std::move(p));
  return std::make_shared<const CompiledPlanStore>(std::make_shared<const PlanStore>(
      registry, std::move(by_name), std::chrono::system_clock::time_point{}));
}

std::shared_ptr<const Plan> ScorePlan() {
  NodeParams ids;
  ids.ids = {9007199254740993, -4, 0};
  return PlanBuilder("score")
      .Param(PlanParam{"weight", ValueType::kFloat, 0.5, 0.0, 100.0, std::nullopt})
      .Add("ids", Op::kFixedSource, {}, ids)
      .Expr("e0", X::Div(X::Param("weight"), X::Key("id")))
      .Add("score", Op::kVm, {"ids"}, testing::VmParams("final_score", "e0"))
      .Add("top", Op::kTopk, {"score"}, testing::TopkParams("final_score", 2))
      .Output("top")
      .Build();
}

std::shared_ptr<const Plan> ViewerPlan() {
  return PlanBuilder("viewer").Add("viewer", Op::kViewer, {}).Output("viewer").Build();
}

TEST(RankerTest, RanksAndWritesTheResponseOfDocsEngineMd) {
  const auto store = StoreOf({ScorePlan()});
  const Ranker::Answer a =
      Rank(store, R"({"plan":"score","request_id":"r1","params":{"weight":-0.0}})");
  EXPECT_FALSE(a.error);
  // 0.0 / 9007199254740993 is 0, -0.0 / -4 is 0 (written 0), division by zero is null: ties keep
  // their input order, nulls last.
  EXPECT_EQ(
      a.body,
      R"({"request_id":"r1","plan":"score","plan_digest":"","outputs":{"top":[)"
      R"({"id":9007199254740993,"final_score":0},{"id":-4,"final_score":0}]},"degraded":[]})");
  EXPECT_EQ(a.request_id, "r1");
  EXPECT_EQ(a.plan, "score");
  EXPECT_EQ(a.degraded, 0u);
  EXPECT_EQ(a.rows, 2u);  // top's two rows
  ASSERT_EQ(a.nodes.size(), 3u);
  EXPECT_EQ(a.nodes[1].node, "score");
  EXPECT_GE(a.nodes[1].duration_us, 0);
  EXPECT_EQ(a.nodes[0].unparsable_values, 0u);  // a fixed source parses nothing
}

TEST(RankerTest, WritesTheServedRecordOfARankedAnswerWhenAsked) {
  const auto store = StoreOf({ScorePlan()});
  const std::string body = R"({"plan":"score","request_id":"r1","params":{"weight":-0.0}})";
  rt::EventLoop loop;
  const Ranker::Answer a = loop.RunUntilComplete(
      [](std::shared_ptr<const CompiledPlanStore> s, std::string b) -> rt::Task<Ranker::Answer> {
        EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
        Ranker ranker(std::move(s), endpoints, RankerOptions{});
        co_return co_await ranker.Rank(b, Ranker::Context{.served_record = true});
      }(store, body));
  EXPECT_FALSE(a.error);
  // The topk output's rows by rank, each with its score (the key topk ranked by) and the row's
  // other keys as its features; no viewer; no surface.
  EXPECT_EQ(a.served_record,
            R"({"request_id":"r1","plan":"score","plan_digest":"","surface":"","variant":"",)"
            R"("viewer_id":null,"request":"{\"plan\":\"score\",\"request_id\":\"r1\",)"
            R"(\"params\":{\"weight\":-0.0}}","outputs":{"top":{"score_key":"final_score",)"
            R"("items":[{"rank":1,"id":9007199254740993,"score":0,"features":{"final_score":0}},)"
            R"({"rank":2,"id":-4,"score":0,"features":{"final_score":0}}]}},"degraded":[]})");
  // Not asked, or not ranked: none.
  EXPECT_EQ(Rank(store, body).served_record, "");
}

// ids 1..6 scored by their id, then topk by score and take, each counting result_size: a request's
// result_size sets how many rows it gets; the plan's default when it gives none.
std::shared_ptr<const Plan> ResultSizePlan() {
  NodeParams ids;
  ids.ids = {3, 1, 6, 2, 5, 4};
  NodeParams top = testing::TopkParams("final_score", 1000);
  top.k_param = "result_size";
  NodeParams first;
  first.count = 1000;
  first.count_param = "result_size";
  return PlanBuilder("sized")
      .Param(PlanParam{"result_size", ValueType::kInt, std::int64_t{2}, 1.0, 1000.0, std::nullopt})
      .Add("ids", Op::kFixedSource, {}, ids)
      .Expr("e0", X::Key("id"))
      .Add("score", Op::kVm, {"ids"}, testing::VmParams("final_score", "e0"))
      .Add("top", Op::kTopk, {"score"}, top)
      .Add("first", Op::kTake, {"ids"}, first)
      .Output("top")
      .Output("first")
      .Build();
}

TEST(RankerTest, ARequestsResultSizeIsHowManyRowsTopkAndTakeKeep) {
  const auto store = StoreOf({ResultSizePlan()});
  const Ranker::Answer four = Rank(store, R"({"plan":"sized","params":{"result_size":4}})");
  ASSERT_FALSE(four.error) << four.body;
  EXPECT_NE(four.body.find(R"("top":[{"id":6,"final_score":6},{"id":5,"final_score":5},)"
                           R"({"id":4,"final_score":4},{"id":3,"final_score":3}])"),
            std::string::npos)
      << four.body;
  EXPECT_NE(four.body.find(R"("first":[{"id":3},{"id":1},{"id":6},{"id":2}])"), std::string::npos)
      << four.body;
  EXPECT_EQ(four.rows, 8u);
  // The plan's default, 2.
  const Ranker::Answer two = Rank(store, R"({"plan":"sized"})");
  ASSERT_FALSE(two.error) << two.body;
  EXPECT_EQ(two.rows, 4u);
  EXPECT_NE(two.body.find(R"("first":[{"id":3},{"id":1}])"), std::string::npos) << two.body;
  // More than the input has: every row.
  const Ranker::Answer all = Rank(store, R"({"plan":"sized","params":{"result_size":1000}})");
  ASSERT_FALSE(all.error) << all.body;
  EXPECT_EQ(all.rows, 12u);
  // Outside the param's bounds: refused before anything runs.
  const Ranker::Answer zero = Rank(store, R"({"plan":"sized","params":{"result_size":0}})");
  EXPECT_EQ(zero.error, ErrorCode::kInvalidParam) << zero.body;
  EXPECT_NE(zero.body.find("param result_size must be >= 1 and <= 1000"), std::string::npos)
      << zero.body;
  const Ranker::Answer fraction = Rank(store, R"({"plan":"sized","params":{"result_size":2.5}})");
  EXPECT_EQ(fraction.error, ErrorCode::kInvalidParam) << fraction.body;
}

TEST(CompiledPlanTest, KeepsTheSlotOfTheParamACountReadsAndRefusesAnUndeclaredOne) {
  const auto store = StoreOf({ResultSizePlan()});
  const std::shared_ptr<const CompiledPlan> sized = store->Find("sized");
  ASSERT_NE(sized, nullptr);
  for (const CompiledNode& n : sized->nodes()) {
    if (n.node->op == Op::kTopk || n.node->op == Op::kTake) {
      EXPECT_EQ(n.int_param_slot, std::optional<std::size_t>(0)) << n.node->id;
    } else {
      EXPECT_FALSE(n.int_param_slot) << n.node->id;
    }
  }
  const auto registry = testing::ExampleRegistry("127.0.0.1:1");
  NodeParams ids;
  ids.ids = {1};
  NodeParams first;
  first.count_param = "result_size";
  const auto undeclared = PlanBuilder("undeclared")
                              .Add("ids", Op::kFixedSource, {}, ids)
                              .Add("first", Op::kTake, {"ids"}, first)
                              .Output("first")
                              .Build();
  try {
    CompilePlan(undeclared, registry);
    ADD_FAILURE() << "compiled";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "plan node \"first\": count names no declared int param \"result_size\"");
  }
}

TEST(RankerTest, AnAnswerWithNoRowsHasRowsZero) {
  NodeParams ids;
  ids.ids = {1, 2};
  NodeParams none;
  none.pred = "p0";  // an id is never null: no row passes
  const auto empty = PlanBuilder("empty")
                         .Add("ids", Op::kFixedSource, {}, ids)
                         .Pred("p0", P::IsNull(X::Key("id")))
                         .Add("top", Op::kFilter, {"ids"}, none)
                         .Output("top")
                         .Build();
  const Ranker::Answer b = Rank(StoreOf({empty}), R"({"plan":"empty"})");
  ASSERT_FALSE(b.error) << b.body;
  EXPECT_EQ(b.rows, 0u);
  EXPECT_NE(b.body.find(R"("outputs":{"top":[]})"), std::string::npos) << b.body;
}

TEST(RankerTest, ExplainListsEveryNodeAndTheTotals) {
  const Ranker::Answer a = Rank(StoreOf({ScorePlan()}), R"({"plan":"score","explain":true})");
  EXPECT_FALSE(a.error);
  for (const std::string_view field :
       {R"("explain":{"nodes":[{"node":"ids","op":"fixed_source","status":"ok",)",
        R"("rows_in":0,"rows_out":3,"redis_commands":0,"round_trips":0,"reply_bytes":0,)",
        R"({"node":"top","op":"topk","status":"ok",)", R"("rows_in":3,"rows_out":2,)",
        R"("ran_on":"loop",)", R"("totals":{"redis_commands":0,"round_trips":0,"cpu_us":)",
        R"(,"elapsed_us":)"}) {
    EXPECT_NE(a.body.find(field), std::string::npos) << field << "\n" << a.body;
  }
}

TEST(RankerTest, AFailedRequestCarriesTheExplainOfWhatRanWhenAskedFor) {
  NodeParams ids;
  ids.ids = {1, 2};
  NodeParams nap;
  nap.ms = 10'000;
  NodeParams first;
  first.count = 1;
  const auto store =
      StoreOf({PlanBuilder("slow")
                   .Add("ids", Op::kFixedSource, {}, ids)
                   .Add("nap", Op::kSleep, {"ids"}, nap, OnError::kFail, /*timeout_ms=*/1)
                   .Add("top", Op::kTake, {"nap"}, first)
                   .Output("top")
                   .Build()});
  const Ranker::Answer failed = Rank(store, R"({"plan":"slow","request_id":"f1","explain":true})");
  ASSERT_EQ(failed.error, ErrorCode::kDeadlineExceeded) << failed.body;
  for (const std::string_view field :
       {R"({"request_id":"f1","error":{"code":"deadline_exceeded","message":"node nap timed out)",
        R"(},"explain":{"nodes":[{"node":"ids","op":"fixed_source","status":"ok",)",
        R"({"node":"nap","op":"sleep","status":"failed","reason":"timeout",)",
        R"({"node":"top","op":"take","status":"not_run",)", R"("totals":{"redis_commands":0,)"}) {
    EXPECT_NE(failed.body.find(field), std::string::npos) << field << "\n" << failed.body;
  }
  // Without explain: the error alone.
  const Ranker::Answer plain = Rank(store, R"({"plan":"slow","request_id":"f2"})");
  ASSERT_EQ(plain.error, ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(plain.body, R"({"request_id":"f2","error":{"code":"deadline_exceeded","message":)"
                        R"("node nap timed out after 1 ms"}})");
}

TEST(RankerTest, ARequestItsCallerStopsIsStillAnsweredShuttingDownWithItsId) {
  NodeParams ids;
  ids.ids = {1};
  NodeParams nap;
  nap.ms = 60'000;
  const auto store = StoreOf({PlanBuilder("slow")
                                  .Add("ids", Op::kFixedSource, {}, ids)
                                  .Add("nap", Op::kSleep, {"ids"}, nap)
                                  .Output("nap")
                                  .Build()});
  rt::EventLoop loop;
  const Ranker::Answer a = loop.RunUntilComplete(
      [](std::shared_ptr<const CompiledPlanStore> s) -> rt::Task<Ranker::Answer> {
        EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
        Ranker ranker(std::move(s), endpoints, RankerOptions{});
        const std::string body = R"({"plan":"slow","request_id":"s1","deadline_ms":60000})";
        // The caller (a server's drain past its grace) stops the request while its node sleeps.
        rt::CancelSource stop;
        rt::TaskScope scope;
        scope.Spawn([](rt::CancelSource* source) -> rt::Task<void> {
          co_await rt::SleepFor(std::chrono::milliseconds(5));
          source->RequestCancel();
        }(&stop));
        rt::Task<Ranker::Answer> ranking = ranker.Rank(body);
        ranking.promise().set_cancel_token(stop.token());
        Ranker::Answer answer = co_await std::move(ranking);
        co_await scope.Join();
        co_return answer;
      }(store));
  ASSERT_EQ(a.error, ErrorCode::kShuttingDown) << a.body;
  EXPECT_EQ(a.request_id, "s1");
  EXPECT_NE(a.body.find(R"({"request_id":"s1","error":{"code":"shutting_down","message":)"),
            std::string::npos)
      << a.body;
  EXPECT_EQ(a.plan, "slow");
}

// Runs one request with headers through a Ranker over `store`, with no endpoints.
Ranker::Answer RankWith(std::shared_ptr<const CompiledPlanStore> store, std::string_view body,
                        std::optional<std::string> request_id, std::string traceparent) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](std::shared_ptr<const CompiledPlanStore> s, std::string b,
                                  std::optional<std::string> id,
                                  std::string trace) -> rt::Task<Ranker::Answer> {
    EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
    Ranker ranker(std::move(s), endpoints, RankerOptions{});
    Ranker::Context headers;
    if (id) headers.request_id = *id;
    headers.traceparent = trace;
    co_return co_await ranker.Rank(b, headers);
  }(std::move(store), std::string(body), std::move(request_id), std::move(traceparent)));
}

// An Admission that refuses every request, or admits each and counts its releases.
class CountingAdmission final : public Admission {
 public:
  explicit CountingAdmission(bool refuse) : refuse_(refuse) {}
  rt::Task<std::optional<RankError>> Admit(const CompiledPlan& plan, std::int64_t) override {
    ++asked;
    asked_plan = plan.plan().name;
    if (refuse_) co_return RankError{ErrorCode::kOverloaded, "refused by the test"};
    ++admitted;
    admitted_plan = &plan;
    co_return std::nullopt;
  }
  void Release(const CompiledPlan& plan, std::int64_t) noexcept override {
    ++released;
    released_plan = &plan;
  }
  bool AdmitShadow(const CompiledPlan&, rt::CancelSource&) override {
    ++shadows_asked;
    return !refuse_;
  }
  void ReleaseShadow(const CompiledPlan&, rt::CancelSource&) noexcept override {}

  int shadows_asked = 0;
  int asked = 0;
  int admitted = 0;
  int released = 0;
  std::string asked_plan;
  const CompiledPlan* admitted_plan = nullptr;
  const CompiledPlan* released_plan = nullptr;

 private:
  bool refuse_;
};

// Runs one request through a Ranker over `store` that asks `admission`.
Ranker::Answer RankAdmitted(std::shared_ptr<const CompiledPlanStore> store, std::string_view body,
                            Admission* admission) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](std::shared_ptr<const CompiledPlanStore> s, std::string b,
                                  Admission* a) -> rt::Task<Ranker::Answer> {
    EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
    Ranker ranker(std::move(s), endpoints, RankerOptions{});
    ranker.set_admission(a);
    co_return co_await ranker.Rank(b);
  }(std::move(store), std::string(body), admission));
}

TEST(RankerTest, AsksAdmissionOnceThePlanIsKnownAndReleasesWhatItAdmitted) {
  const auto store = StoreOf({ScorePlan()});
  CountingAdmission refusing(true);
  const Ranker::Answer shed =
      RankAdmitted(store, R"({"plan":"score","request_id":"r-9"})", &refusing);
  ASSERT_TRUE(shed.error);
  EXPECT_EQ(*shed.error, ErrorCode::kOverloaded);
  EXPECT_EQ(shed.request_id, "r-9");  // the refusal answers with the client's id
  ASSERT_NE(shed.compiled, nullptr);  // and is counted under its plan
  EXPECT_EQ(
      shed.body,
      R"({"request_id":"r-9","error":{"code":"overloaded","message":"refused by the test"}})");
  EXPECT_TRUE(shed.nodes.empty());  // nothing ran
  EXPECT_EQ(refusing.asked, 1);
  EXPECT_EQ(refusing.asked_plan, "score");
  EXPECT_EQ(refusing.released, 0);

  CountingAdmission admitting(false);
  EXPECT_FALSE(RankAdmitted(store, R"({"plan":"score"})", &admitting).error);
  EXPECT_EQ(RankAdmitted(store, R"({"plan":"score","params":{"weight":-1}})", &admitting).error,
            ErrorCode::kInvalidParam);  // refused before admission: not asked
  EXPECT_EQ(admitting.asked, 1);
  EXPECT_EQ(admitting.released, 1);
  ASSERT_NE(admitting.admitted_plan, nullptr);
  EXPECT_EQ(admitting.released_plan, admitting.admitted_plan);  // the plan it admitted
  EXPECT_EQ(RankAdmitted(store, R"({"plan":"nope"})", &admitting).error, ErrorCode::kUnknownPlan);
  EXPECT_EQ(admitting.asked, 1);
}

TEST(CompiledPlanTest, NeedsTheEndpointsItsFailNodesRead) {
  const std::shared_ptr<const Registry> registry = testing::ExampleRegistry("127.0.0.1:1");
  NodeParams features;
  features.schema = "media_features";
  features.keys = {"likes"};
  const auto feed = [&](OnError features_policy) {
    return CompilePlan(
        PlanBuilder("feed")
            .Add("viewer", Op::kViewer, {})
            .Add("follow", Op::kFollow, {"viewer"}, testing::Fanout(5))
            .Add("media", Op::kMedia, {"follow"}, testing::Fanout(4))
            .Add("features", Op::kFetchFeatures, {"media"}, features, features_policy)
            .Output("features")
            .Build(),
        registry);
  };
  // Endpoints in name order: features 0, graph 1.
  EXPECT_EQ(feed(OnError::kFail)->endpoints_needed(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(feed(OnError::kSkip)->endpoints_needed(), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(CompilePlan(ScorePlan(), registry)->endpoints_needed().empty());
}

TEST(RankerTest, TakesTheRequestIdHeaderWhenTheBodyHasNone) {
  const auto store = StoreOf({ScorePlan()});
  const std::string trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const Ranker::Answer header = RankWith(store, R"({"plan":"score"})", "h-1", trace);
  EXPECT_FALSE(header.error);
  EXPECT_EQ(header.request_id, "h-1");
  EXPECT_EQ(header.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  const Ranker::Answer body = RankWith(store, R"({"plan":"score","request_id":"b"})", "h-1", "");
  EXPECT_EQ(body.request_id, "b");
  EXPECT_EQ(body.trace_id, "");
  const Ranker::Answer bad = RankWith(store, R"({"plan":"score"})", "h\x01", "bogus");
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(*bad.error, ErrorCode::kBadRequest);
  EXPECT_NE(bad.body.find("X-Request-Id must be printable ASCII"), std::string::npos) << bad.body;
  EXPECT_EQ(bad.request_id.rfind("rankd-", 0), 0u);
  EXPECT_EQ(bad.trace_id, "");
}

TEST(RankerTest, ARequestAskingToBeCapturedIsCapturedOnlyWhereTheCallerKeepsCaptures) {
  const auto store = StoreOf({ScorePlan()});
  // Nowhere to keep it: a bad_request saying so.
  const Ranker::Answer refused = Rank(store, R"({"plan":"score","capture":true})");
  ASSERT_TRUE(refused.error);
  EXPECT_EQ(*refused.error, ErrorCode::kBadRequest);
  EXPECT_NE(refused.body.find("capture: this server keeps no captures"), std::string::npos)
      << refused.body;
  // A caller that keeps captures: the request asking is captured, the others only with
  // capture_all.
  const auto rank = [&](std::string body, bool all) {
    rt::EventLoop loop;
    return loop.RunUntilComplete([](std::shared_ptr<const CompiledPlanStore> s, std::string b,
                                    bool capture_all) -> rt::Task<Ranker::Answer> {
      EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
      Ranker ranker(std::move(s), endpoints, RankerOptions{});
      RequestCapture capture;
      co_return co_await ranker.Rank(
          b, Ranker::Context{.capture = &capture, .capture_all = capture_all});
    }(store, std::move(body), all));
  };
  const Ranker::Answer asked = rank(R"({"plan":"score","capture":true})", false);
  EXPECT_FALSE(asked.error);
  EXPECT_TRUE(asked.captured);
  EXPECT_FALSE(rank(R"({"plan":"score"})", false).captured);
  EXPECT_TRUE(rank(R"({"plan":"score"})", true).captured);
  EXPECT_FALSE(rank(R"({"plan":"score","capture":false})", false).captured);
}

TEST(RankerTest, AnErrorAfterThePlanIsFoundKeepsThePlan) {
  const auto store = StoreOf({ScorePlan()});
  const Ranker::Answer a = Rank(store, R"({"plan":"score","params":{"weight":"x"}})");
  ASSERT_TRUE(a.error);
  EXPECT_EQ(*a.error, ErrorCode::kInvalidParam);
  ASSERT_NE(a.compiled, nullptr);
  EXPECT_EQ(a.compiled->plan().name, "score");
  EXPECT_EQ(Rank(store, R"({"plan":"nope"})").compiled, nullptr);
}

TEST(RankerTest, CompilesARequestsNewPatternsOffTheLoopAndStillRefusesABadOne) {
  const auto store = StoreOf({ParamPlanSpec()});
  const std::string fresh = "ranker-test-[a-z]+";
  ASSERT_FALSE(RegexCached(fresh, "i"));
  const Ranker::Answer ok =
      Rank(store, R"({"plan":"params","params":{"pattern":")" + fresh + R"("}})");
  EXPECT_FALSE(ok.error) << ok.body;
  EXPECT_TRUE(RegexCached(fresh, "i"));
  EXPECT_TRUE(RegexCached(fresh, "s"));
  const Ranker::Answer refused =
      Rank(store, R"({"plan":"params","params":{"pattern":"\\pL{400}"}})");
  ASSERT_EQ(refused.error, ErrorCode::kInvalidParam) << refused.body;
  EXPECT_NE(refused.body.find("pattern too large"), std::string::npos) << refused.body;
}

TEST(RankerTest, AnswersEachRequestErrorWithItsCode) {
  const auto store = StoreOf({ScorePlan(), ViewerPlan()});
  struct Case {
    std::string_view body;
    ErrorCode code;
    std::string_view message;
  };
  const Case cases[] = {
      {R"({"plan":"nope"})", ErrorCode::kUnknownPlan, R"(no plan \"nope\" in the plan store)"},
      {R"({"plan":"viewer"})", ErrorCode::kBadRequest,
       "viewer_id is required: plan viewer reads the viewer"},
      {R"({"plan":"score","params":{"weight":101}})", ErrorCode::kInvalidParam,
       "param weight must be >= 0 and <= 100"},
      {R"({"plan":"score","deadline_ms":0})", ErrorCode::kBadRequest, "deadline_ms"},
  };
  for (const Case& c : cases) {
    const Ranker::Answer a = Rank(store, c.body);
    ASSERT_TRUE(a.error) << c.body;
    EXPECT_EQ(*a.error, c.code) << c.body;
    EXPECT_NE(a.body.find(std::string("\"code\":\"") + std::string(WireName(c.code)) + "\""),
              std::string::npos)
        << a.body;
    EXPECT_NE(a.body.find(c.message), std::string::npos) << a.body;
    // No request_id given: rankd makes one, so the answer and its log line can be matched.
    EXPECT_EQ(a.request_id.rfind("rankd-", 0), 0u) << a.request_id;
    EXPECT_NE(a.body.find("\"request_id\":\"" + a.request_id + "\""), std::string::npos);
  }
}

// A store of the score and sized plans with the surface "home": control runs score, fresh runs
// sized, half the viewers each.
std::shared_ptr<const CompiledPlanStore> SurfaceStore() {
  const std::shared_ptr<const Registry> registry = testing::ExampleRegistry("127.0.0.1:1");
  std::map<std::string, std::shared_ptr<const Plan>> plans;
  plans.emplace("score", ScorePlan());
  plans.emplace("sized", ResultSizePlan());
  auto home = std::make_shared<Surface>();
  home->name = "home";
  home->salt = "home-1";
  home->variants.push_back(SurfaceVariant{"control", "score", 1, 0, 0});
  home->variants.push_back(SurfaceVariant{"fresh", "sized", 1, 0, 0});
  SetBucketRanges(home->variants);
  PlanStore::Surfaces surfaces;
  surfaces.emplace("home", std::move(home));
  return std::make_shared<const CompiledPlanStore>(std::make_shared<const PlanStore>(
      registry, std::move(plans), std::chrono::system_clock::time_point{}, std::move(surfaces)));
}

TEST(RankerTest, ASurfaceAnswersWithTheViewersVariantsPlan) {
  const auto store = SurfaceStore();
  const Surface& home = *store->store().FindSurface("home");
  std::set<std::string> seen;
  for (std::int64_t viewer = 1; viewer <= 16; ++viewer) {
    const SurfaceVariant& expected = home.Assign(viewer);
    const std::string id = std::to_string(viewer);
    const Ranker::Answer a =
        Rank(store, R"({"surface":"home","request_id":"r)" + id + R"(","viewer_id":)" + id + "}");
    ASSERT_FALSE(a.error) << a.body;
    EXPECT_EQ(a.surface, "home");
    EXPECT_EQ(a.variant, expected.name);
    EXPECT_EQ(a.plan, expected.plan);
    ASSERT_NE(a.compiled, nullptr);
    EXPECT_EQ(a.compiled->plan().name, expected.plan);
    // The same body as the plan named directly, with surface and variant after plan_digest.
    const Ranker::Answer direct =
        Rank(store, R"({"plan":")" + expected.plan + R"(","request_id":"r)" + id + R"("})");
    std::string with_variant = direct.body;
    const std::string after = R"("plan_digest":"")";
    with_variant.insert(with_variant.find(after) + after.size(),
                        R"(,"surface":"home","variant":")" + expected.name + "\"");
    EXPECT_EQ(a.body, with_variant);
    seen.insert(a.variant);
  }
  EXPECT_EQ(seen.size(), 2u) << "16 viewers, two halves: both variants answer";
}

TEST(RankerTest, ASurfaceRequestsErrors) {
  const auto store = SurfaceStore();
  const Ranker::Answer unknown = Rank(store, R"({"surface":"nope","viewer_id":1})");
  ASSERT_TRUE(unknown.error);
  EXPECT_EQ(*unknown.error, ErrorCode::kUnknownPlan);
  EXPECT_NE(unknown.body.find(R"(no surface \"nope\" in the plan store)"), std::string::npos)
      << unknown.body;
  EXPECT_EQ(unknown.surface, "");
  EXPECT_EQ(unknown.compiled, nullptr);
  const Ranker::Answer no_viewer = Rank(store, R"({"surface":"home"})");
  ASSERT_TRUE(no_viewer.error);
  EXPECT_EQ(*no_viewer.error, ErrorCode::kBadRequest);
  EXPECT_NE(no_viewer.body.find("viewer_id is required: surface home"), std::string::npos)
      << no_viewer.body;
}

}  // namespace
}  // namespace rankd::engine
