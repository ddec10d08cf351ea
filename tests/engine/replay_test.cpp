// Capture and replay (docs/experiments.md, "Capture and replay"): capture files round-trip every
// outcome and bytes a JSON string cannot carry, and refuse lines that are not captures naming
// the member; base64 as RFC 4648; random plans over in-memory Redis data with faults (the plan
// fuzzer's cases: error replies, wrong shapes, stalls, lost connections) answer from their
// capture, with no Redis, exactly as they answered when captured, on both schedulers; commands
// a capture lacks are counted and answered with an error reply.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <set>
#include <string>

#include "memory_endpoint.h"
#include "plan_answer.h"
#include "plan_builder.h"
#include "plan_case_registry.h"
#include "plan_cases.h"
#include "prepared_case.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/experiments/capture_file.h"
#include "rankd/engine/experiments/replay_endpoint.h"
#include "rankd/runtime/event_loop.h"
#include "reference_executor.h"
#include "test_registry.h"
#include "vm_cases.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using experiments::CaptureRecord;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCases = 150;
#else
constexpr int kCases = 600;
#endif

CapturedCommand Command(std::uint32_t batch, std::string endpoint, std::string command,
                        CapturedOutcome outcome, std::string reply = {}) {
  return CapturedCommand{batch, std::move(endpoint), std::move(command), outcome, std::move(reply)};
}

TEST(CaptureFileTest, RoundTripsEveryOutcomeAndBytesAJsonStringCannotCarry) {
  CaptureRecord record;
  record.request = R"({"plan":"feed","viewer_id":1,"params":{"q":"caf\u00e9 \"x\""}})";
  record.request_id = "r-1";
  record.plan = "feed";
  record.plan_digest = std::string(64, 'a');
  record.response =
      "{\"request_id\":\"r-1\",\"outputs\":{\"top\":[{\"id\":1,\"t\":\"\xc3\xa9\"}]}}";
  record.commands = {
      Command(0, "graph", "*3\r\n$6\r\nLRANGE\r\n$8\r\nfollow:1\r\n$1\r\n0\r\n",
              CapturedOutcome::kReply, "*2\r\n$1\r\n2\r\n$1\r\n3\r\n"),
      // A reply holding bytes that are not UTF-8 (a dirty value): written as base64.
      Command(1, "features", "*3\r\n$5\r\nHMGET\r\n$16\r\nmedia_features:2\r\n$3\r\nctr\r\n",
              CapturedOutcome::kReply, std::string("*1\r\n$2\r\n\xff\xfe\r\n")),
      // A command whose argument is not UTF-8: the whole command as base64.
      Command(1, "features", std::string("*2\r\n$7\r\nHGETALL\r\n$2\r\n\x80k\r\n"),
              CapturedOutcome::kErrorReply,
              "WRONGTYPE Operation against a key holding the wrong kind of value"),
      Command(2, "graph", "*2\r\n$7\r\nHGETALL\r\n$6\r\nuser:3\r\n",
              CapturedOutcome::kCommandTimeout),
      Command(3, "graph", "*2\r\n$7\r\nHGETALL\r\n$6\r\nuser:4\r\n",
              CapturedOutcome::kConnectionLost),
      Command(4294967295u, "graph", "*2\r\n$7\r\nHGETALL\r\n$6\r\nuser:5\r\n",
              CapturedOutcome::kUnanswered),
  };
  std::string line;
  experiments::AppendCaptureLine(line, record);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  EXPECT_NE(
      line.find(
          R"({"batch":0,"endpoint":"graph","command":["LRANGE","follow:1","0"],"outcome":"reply")"),
      std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("reply_base64":"KjENCiQyDQr//g0K")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("command_base64":)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("outcome":"unanswered"})"), std::string::npos) << line;

  const auto back = experiments::ParseCaptureLine(line);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->request, record.request);
  EXPECT_EQ(back->request_id, record.request_id);
  EXPECT_EQ(back->plan, record.plan);
  EXPECT_EQ(back->plan_digest, record.plan_digest);
  EXPECT_EQ(back->response, record.response);
  ASSERT_EQ(back->commands.size(), record.commands.size());
  for (std::size_t i = 0; i < record.commands.size(); ++i) {
    EXPECT_EQ(back->commands[i].batch, record.commands[i].batch) << i;
    EXPECT_EQ(back->commands[i].endpoint, record.commands[i].endpoint) << i;
    EXPECT_EQ(back->commands[i].command, record.commands[i].command) << i;
    EXPECT_EQ(back->commands[i].outcome, record.commands[i].outcome) << i;
    EXPECT_EQ(back->commands[i].reply, record.commands[i].reply) << i;
  }
}

TEST(CaptureFileTest, Base64IsRfc4648s) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : vectors) {
    std::string out;
    experiments::AppendBase64(out, bytes);
    EXPECT_EQ(out, text);
    const auto decoded = experiments::DecodeBase64(text);
    ASSERT_TRUE(decoded.has_value()) << text;
    EXPECT_EQ(*decoded, bytes);
  }
  for (const std::string bad : {"Zg=", "Z===", "Zg=a", "Zm9v!A==", "=Zg=", "Zg==Zg=="}) {
    EXPECT_FALSE(experiments::DecodeBase64(bad).has_value()) << bad;
  }
}

TEST(CaptureFileTest, ALineThatIsNotACaptureIsAnErrorNamingWhatIsWrong) {
  const std::string head =
      R"({"rankd_capture":1,"request":"{}","request_id":"r","plan":"p","plan_digest":"","response":"{}",)";
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not JSON"},
      {"[1]", "must be a JSON object"},
      {R"({"rankd_capture":2})", "rankd_capture must be 1"},
      {R"({"rankd_capture":1})", "missing request"},
      {R"({"rankd_capture":1,"request":"{}","response":"{}"})", "request_id must be a string"},
      {head + R"("commands":{}})", "commands must be an array"},
      {head + R"("commands":[1]})", "commands[0]: must be an object"},
      {head + R"("commands":[{"batch":-1,"endpoint":"g","command":["GET"],"outcome":"timeout"}]})",
       "commands[0]: batch must be an integer from 0 to 4294967295"},
      {head +
           R"("commands":[{"batch":0,"endpoint":"g","command":[],"outcome":"reply","reply":""}]})",
       "commands[0]: command must be a non-empty array of strings"},
      {head + R"("commands":[{"batch":0,"endpoint":"g","command":["GET"],"outcome":"late"}]})",
       "commands[0]: outcome must be reply, error, timeout, connection or unanswered"},
      {head + R"("commands":[{"batch":0,"endpoint":"g","command":["GET"],"outcome":"reply"}]})",
       "commands[0]: missing reply"},
      {head +
           R"("commands":[{"batch":0,"endpoint":"g","command_base64":"R0VU","outcome":"timeout"}]})",
       "commands[0]: command_base64 is not a RESP array of bulk strings"},
      {head +
           R"("commands":[{"batch":0,"endpoint":"g","command":["GET"],"outcome":"reply","reply_base64":"%"}]})",
       "commands[0]: reply_base64: base64 text must have a multiple of 4 characters"},
  };
  for (const auto& [line, message] : cases) {
    const auto r = experiments::ParseCaptureLine(line);
    ASSERT_FALSE(r.has_value()) << line;
    EXPECT_NE(r.error().find(message), std::string::npos) << line << "\n -> " << r.error();
  }
}

// Runs `plan` over `endpoints` on a fresh loop.
ExecutionResult RunOnFreshLoop(std::function<EndpointSet()> make_endpoints,
                               std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                               ExecuteOptions options) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](std::function<EndpointSet()> make,
                                  std::shared_ptr<const CompiledPlan> c, RequestInputs in,
                                  ExecuteOptions o) -> rt::Task<ExecutionResult> {
    const EndpointSet endpoints = make();
    co_return co_await ExecutePlan(std::move(c), std::move(in), endpoints, o);
  }(std::move(make_endpoints), std::move(plan), std::move(inputs), options));
}

EndpointSet ReplayEndpoints(const Registry& registry, experiments::CapturedReplies& replies) {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  for (const EndpointDef& e : registry.endpoints()) {
    endpoints.push_back(std::make_unique<experiments::ReplayEndpoint>(e.name, replies));
  }
  return EndpointSet(std::move(endpoints));
}

TEST(ReplayTest, RandomPlansWithFaultsAnswerFromTheirCaptureAsTheyDidWhenCaptured) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  testing::MemoryStore store;
  int mismatches = 0;
  std::size_t captured_commands = 0;
  std::set<CapturedOutcome> outcomes;
  constexpr CapturedOutcome kExercised[] = {CapturedOutcome::kReply, CapturedOutcome::kErrorReply,
                                            CapturedOutcome::kConnectionLost,
                                            CapturedOutcome::kUnanswered};
  const auto all_exercised = [&] {
    return std::all_of(std::begin(kExercised), std::end(kExercised),
                       [&](CapturedOutcome o) { return outcomes.contains(o); });
  };
  // kCases cases, and more (up to 4 kCases) until every outcome a capture records has come up:
  // which case draws which fault follows the generator, so a new op can move them.
  for (int n = 0; (n < kCases || !all_exercised()) && n < 4 * kCases && mismatches < 5; ++n) {
    const std::uint64_t seed = 0x7e9a0000u + static_cast<std::uint64_t>(n);
    const testing::PreparedCase prepared = testing::PrepareCase(seed, registry, store);
    const testing::PlanCase& c = prepared.c;
    const testing::ReferenceResult& reference = prepared.reference;
    const std::shared_ptr<const Plan>& plan = prepared.plan;
    const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(plan, registry);
    for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
      ExecuteOptions options;
      options.deadline = 5s;
      options.scheduler = scheduler;
      options.offload_rows = c.offload_rows;
      RequestCapture capture;
      options.capture = &capture;
      const ExecutionResult live =
          RunOnFreshLoop([&] { return testing::MemoryEndpoints(*registry, &store); }, compiled,
                         RequestInputs{c.params, c.viewer_id}, options);
      captured_commands += capture.commands().size();
      for (const CapturedCommand& command : capture.commands()) outcomes.insert(command.outcome);

      experiments::CapturedReplies replies;
      replies.Load(capture.commands());
      options.capture = nullptr;
      const ExecutionResult replayed =
          RunOnFreshLoop([&] { return ReplayEndpoints(*registry, replies); }, compiled,
                         RequestInputs{c.params, c.viewer_id}, options);
      const testing::PlanAnswer want = testing::AnswerOf(live, *compiled);
      const testing::PlanAnswer got = testing::AnswerOf(replayed, *compiled);
      std::optional<std::string> diff = testing::Difference(want, reference.error_codes, got);
      // A failed request's nodes are cut short where the failure finds them, which depends on
      // timing: its replay may send commands the capture lacks, and must still fail alike.
      if (!diff && !replies.missing().empty() && !want.error_code) {
        diff = std::to_string(replies.missing().size()) + " commands missing from the capture";
      }
      if (diff) {
        ++mismatches;
        ADD_FAILURE() << "case seed " << seed
                      << (scheduler == Scheduler::kAsync ? " (async): " : " (sync): ") << *diff
                      << "\ncaptured:\n"
                      << testing::Describe(want) << "replayed:\n"
                      << testing::Describe(got);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The cases exercised what a capture records.
  EXPECT_GT(captured_commands, static_cast<std::size_t>(kCases));
  for (const CapturedOutcome o : kExercised) {
    EXPECT_TRUE(outcomes.contains(o)) << CapturedOutcomeName(o);
  }
}

TEST(ReplayTest, CommandsTheCaptureLacksAreCountedAndAnsweredWithAnErrorReply) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  testing::MemoryStore store;
  // The first case whose plan reads Redis: replayed from an empty capture.
  for (std::uint64_t seed = 1;; ++seed) {
    testing::PlanCaseGenerator<testing::SplitMix64> generator(testing::SplitMix64(seed), *registry);
    const testing::PlanCase c = generator.Case();
    store.Clear(testing::CaseData(registry, testing::Mix64(seed), testing::FaultProfile{}));
    const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(c.plan, registry);
    ExecuteOptions options;
    options.deadline = 5s;
    RequestCapture capture;
    options.capture = &capture;
    RunOnFreshLoop([&] { return testing::MemoryEndpoints(*registry, &store); }, compiled,
                   RequestInputs{c.params, c.viewer_id}, options);
    if (capture.commands().empty()) continue;
    experiments::CapturedReplies replies;
    replies.Load({});
    options.capture = nullptr;
    const ExecutionResult replayed =
        RunOnFreshLoop([&] { return ReplayEndpoints(*registry, replies); }, compiled,
                       RequestInputs{c.params, c.viewer_id}, options);
    EXPECT_FALSE(replies.missing().empty()) << "seed " << seed;
    // Every node that sent a command failed or degraded on the error reply.
    bool failed_or_degraded = replayed.error.has_value();
    for (const NodeReport& r : replayed.nodes) {
      failed_or_degraded = failed_or_degraded || r.status == NodeStatus::kDegraded;
    }
    EXPECT_TRUE(failed_or_degraded) << "seed " << seed;
    if (replayed.error) {
      EXPECT_NE(replayed.error->message.find("the capture has no reply to this command"),
                std::string::npos)
          << replayed.error->message;
    }
    break;
  }
}

// exclude_seen over ids in another order than captured, and over an id never asked: a
// set-membership command the capture lacks as sent is answered member by member from it.
TEST(ReplayTest, AChangedPlansSetMembershipCommandsAreAnsweredMemberByMember) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  const auto plan = [&](std::vector<std::int64_t> ids) {
    NodeParams source;
    source.ids = std::move(ids);
    NodeParams seen;
    seen.schema = "seen";
    return CompilePlan(testing::PlanBuilder()
                           .Add("ids", Op::kFixedSource, {}, source)
                           .Add("unseen", Op::kExcludeSeen, {"ids"}, seen)
                           .Output("unseen")
                           .Build(),
                       registry);
  };
  testing::MemoryStore store;
  store.Put("seen:1", testing::StoredKey::Set({"2", "5"}));
  ExecuteOptions options;
  options.deadline = 5s;
  RequestCapture capture;
  options.capture = &capture;
  RunOnFreshLoop([&] { return testing::MemoryEndpoints(*registry, &store); },
                 plan({1, 2, 3, 4, 5, 6}), RequestInputs{{}, 1}, options);
  ASSERT_EQ(capture.commands().size(), 1u);
  experiments::CapturedReplies replies;
  options.capture = nullptr;
  replies.Load(capture.commands());
  const ExecutionResult reversed =
      RunOnFreshLoop([&] { return ReplayEndpoints(*registry, replies); }, plan({6, 4, 5, 2, 1}),
                     RequestInputs{{}, 1}, options);
  ASSERT_FALSE(reversed.error) << reversed.error->message;
  EXPECT_TRUE(replies.missing().empty());
  EXPECT_EQ(testing::Ids(*reversed.outputs.at(0).rows, *registry),
            (std::vector<std::int64_t>{6, 4, 1}));
  // Id 7 was never asked: the command is missing, and the node fails on it.
  replies.Load(capture.commands());
  const ExecutionResult unknown =
      RunOnFreshLoop([&] { return ReplayEndpoints(*registry, replies); }, plan({1, 7}),
                     RequestInputs{{}, 1}, options);
  EXPECT_EQ(replies.missing().size(), 1u);
  ASSERT_TRUE(unknown.error);
  EXPECT_NE(unknown.error->message.find("the capture has no reply to this command"),
            std::string::npos)
      << unknown.error->message;
}

}  // namespace
}  // namespace rankd::engine
