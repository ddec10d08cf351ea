// libFuzzer target: whole plans, executed three ways that must answer alike — ExecutePlan with the
// async scheduler, with the sync scheduler, and the tests' row-at-a-time reference executor
// (tests/engine/reference_executor.h, written from docs/plan-format.md and docs/engine.md) — over
// Redis data served from memory (tests/engine/memory_endpoint.h).
//
// The front of the input, read forwards, draws the case (tests/engine/plan_cases.h): a valid plan
// over every op, request params, the viewer, the data's fault profile; its back, read backwards,
// the seed every Redis key's data is drawn from (values the value rules take or turn to null,
// missing keys and fields, wrong-type keys, error replies, replies of the wrong shape, lost
// connections, stalled commands). The nodes whose commands stall (the reference says which) get a
// short timeout_ms; every other timeout is far from anything a node takes, so the answer does not
// depend on timing. Compared: the error code of a failed request (one a failing `fail` node may
// end it with), else every output's keys and rows (ids, values bit for bit, nulls, order) and the
// degraded nodes with their reasons. Any difference prints the case and the answers and aborts; a
// crash, a leak or a sanitizer report is a finding too.
//
// RANKD_PLAN_FUZZ_PRINT=1 prints each case (plan, params, Redis keys, the reference's answer)
// before running it: what a crash report needs.
//
// Seeds: fuzz/corpus/plan/ (any input decodes to a valid case).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>

#include "fuzz_bytes.h"
#include "memory_endpoint.h"
#include "plan_answer.h"
#include "plan_case_registry.h"
#include "plan_cases.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/runtime/event_loop.h"
#include "reference_executor.h"

namespace {

using namespace rankd::engine;
using namespace rankd::engine::testing;
using rankd::fuzz::FuzzBytes;

// What every input shares: the registry, the store the endpoints serve, and one event loop
// running on its own thread for the whole process. The fuzzer's thread runs the reference, then
// hands the request to the loop and waits for its answer, so the store is used by one thread at a
// time.
struct FuzzState {
  std::shared_ptr<const Registry> registry = PlanCaseRegistry();
  MemoryStore store;
  rankd::rt::EventLoop loop;
  EndpointSet endpoints = MemoryEndpoints(*registry, &store);
  bool print_cases = false;  // RANKD_PLAN_FUZZ_PRINT=1: print each case before running it

  FuzzState() {
    const char* print = std::getenv("RANKD_PLAN_FUZZ_PRINT");
    print_cases = print != nullptr && std::string(print) == "1";
    loop.Start();
  }

  // Runs one request on the loop; waits for its result.
  ExecutionResult Execute(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                          ExecuteOptions options) {
    std::promise<ExecutionResult> done;
    std::future<ExecutionResult> result = done.get_future();
    const bool posted = loop.Post([&]() {
      loop.Spawn([](const EndpointSet* endpoints, std::shared_ptr<const CompiledPlan> p,
                    RequestInputs in, ExecuteOptions o,
                    std::promise<ExecutionResult>* out) -> rankd::rt::Task<void> {
        try {
          out->set_value(co_await ExecutePlan(std::move(p), std::move(in), *endpoints, o));
        } catch (...) {
          out->set_exception(std::current_exception());
        }
      }(&endpoints, std::move(plan), std::move(inputs), options, &done));
    });
    if (!posted) std::abort();  // the loop is not running
    return result.get();
  }
};

// The request's deadline: never reached (every node that must time out has a short timeout_ms),
// so a node that is not cancelled shows as a difference; a run that reaches it is run once more
// (a starved run passes then, a hang does not), and twice the deadline stays below libFuzzer's
// -timeout (fuzz/run_plan_fuzz.sh and the smoke run).
constexpr auto kDeadline = std::chrono::seconds(5);

std::string ShowExpr(const Expr& e);

std::string ShowScalarValue(const Scalar& v) {
  if (IsNull(v)) return "null";
  if (std::holds_alternative<std::int64_t>(v)) return std::to_string(std::get<std::int64_t>(v));
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "true" : "false";
  if (std::holds_alternative<double>(v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", std::get<double>(v));
    return buf;
  }
  return "\"" + std::get<std::string>(v) + "\"";
}

std::string ShowPred(const Pred& p) {
  std::string out = std::string(PredOpName(p.op)) + "(";
  bool first = true;
  const auto sep = [&]() {
    if (!first) out += ", ";
    first = false;
  };
  for (const Pred& c : p.preds) sep(), out += ShowPred(c);
  for (const Expr& e : p.exprs) sep(), out += ShowExpr(e);
  for (const Scalar& v : p.in_values) sep(), out += ShowScalarValue(v);
  if (p.pattern) sep(), out += "/" + *p.pattern + "/" + p.flags;
  if (p.param) sep(), out += "param " + *p.param + " /" + p.flags;
  return out + ")";
}

std::string ShowExpr(const Expr& e) {
  switch (e.op) {
    case ExprOp::kConst:
      return ShowScalarValue(e.value);
    case ExprOp::kNull:
      return "null";
    case ExprOp::kKey:
      return e.name;
    case ExprOp::kParam:
      return "$" + e.name;
    default:
      break;
  }
  std::string out = std::string(ExprOpName(e.op)) + "(";
  if (e.cond) out += ShowPred(*e.cond) + ", ";
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    if (i > 0) out += ", ";
    out += ShowExpr(e.args[i]);
  }
  return out + ")";
}

std::string ShowStoredKey(const std::optional<StoredKey>& k) {
  if (!k) return "(missing)";
  switch (k->kind) {
    case StoredKey::Kind::kHash: {
      std::string out = "hash {";
      for (const auto& [f, v] : k->fields) out += " " + f + "=" + ShowScalarValue(v);
      return out + " }";
    }
    case StoredKey::Kind::kList: {
      std::string out = "list [";
      for (const std::string& v : k->elements) out += " " + ShowScalarValue(v);
      return out + " ]";
    }
    case StoredKey::Kind::kSet: {
      std::string out = "set {";
      for (const std::string& v : k->elements) out += " " + ShowScalarValue(v);
      return out + " }";
    }
    case StoredKey::Kind::kFault:
      break;
  }
  static const char* kFaults[] = {"none", "error reply", "wrong shape", "stall", "connection lost"};
  return std::string("fault: ") + kFaults[static_cast<int>(k->fault)] +
         (k->fault == KeyFault::kErrorReply ? " " + k->error : "");
}

void PrintCase(const Plan& plan, const PlanCase& c, const MemoryStore& store) {
  std::fprintf(stderr, "plan (viewer %lld, offload_rows %zu):\n",
               static_cast<long long>(c.viewer_id), c.offload_rows);
  for (const Node& n : plan.nodes) {
    std::string line = "  " + n.id + " = " + std::string(OpName(n.op)) + "(";
    for (std::size_t i = 0; i < n.inputs.size(); ++i) line += (i > 0 ? ", " : "") + n.inputs[i];
    line += ")";
    const NodeParams& p = n.params;
    if (p.fanout != 0) line += " fanout=" + std::to_string(p.fanout);
    if (!p.schema.empty()) line += " schema=" + p.schema;
    for (const std::string& k : p.keys) line += " key=" + k;
    for (const std::int64_t id : p.ids) line += " id=" + std::to_string(id);
    if (!p.out_key.empty()) line += " " + p.out_key + " := " + ShowExpr(plan.exprs.at(p.expr));
    if (!p.pred.empty()) line += " where " + ShowPred(plan.preds.at(p.pred));
    if (!p.by.empty()) line += " by=" + p.by;
    if (n.op == Op::kSort) line += p.order == SortOrder::kAsc ? " asc" : " desc";
    // A count from a param: $name and its max, the static bound (the request's value is below).
    const auto count = [](std::int64_t value, const std::string& param) {
      return param.empty() ? std::to_string(value)
                           : "$" + param + " (max " + std::to_string(value) + ")";
    };
    if (n.op == Op::kTake) line += " count=" + count(p.count, p.count_param);
    if (n.op == Op::kTopk) line += " k=" + count(p.k, p.k_param);
    if (n.op == Op::kSleep || n.op == Op::kBusyCpu) line += " ms=" + std::to_string(p.ms);
    if (n.op == Op::kDecay) {
      line += " group=" + p.group + " factor=" + std::to_string(p.factor) + " out=" + p.out_key;
    }
    if (n.op == Op::kInsert) {
      line += " every=" + std::to_string(p.every) + " max=" + std::to_string(p.max_inserted);
    }
    line += n.on_error == OnError::kSkip ? " [skip]" : " [fail]";
    if (n.timeout_ms) line += " timeout_ms=" + std::to_string(*n.timeout_ms);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::string outputs = "  outputs:";
  for (const std::string& o : plan.outputs) outputs += " " + o;
  std::fprintf(stderr, "%s\nparams:", outputs.c_str());
  for (std::size_t i = 0; i < plan.params.size(); ++i) {
    std::fprintf(stderr, " %s=%s", plan.params[i].name.c_str(),
                 ShowScalarValue(c.params.values[i]).c_str());
  }
  std::fprintf(stderr, "\nredis keys read:\n");
  for (const auto& [name, key] : store.keys()) {
    std::fprintf(stderr, "  %s: %s\n", name.c_str(), ShowStoredKey(key).c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzState* const state = new FuzzState();  // lives as long as the process
  PlanCaseGenerator<FuzzBytes> generator(FuzzBytes(data, size, false), *state->registry);
  PlanCase c = generator.Case();
  FuzzBytes seed_bytes(data, size, true);
  for (int i = 0; i < 4; ++i) c.data_seed = (c.data_seed << 16) | seed_bytes();
  state->store.Clear(CaseData(state->registry, c.data_seed, c.faults));

  const ReferenceResult reference =
      RunReference(*c.plan, *state->registry, c.params, c.viewer_id, state->store);
  // Stalled nodes time out (the reference counts them so); others never come near a timeout.
  const std::shared_ptr<const Plan> plan =
      reference.stalled.empty() ? c.plan
                                : WithTimeouts(*c.plan, reference.stalled, kShortTimeoutMs);
  const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(plan, state->registry);
  if (state->print_cases) {  // a crash in the engine then shows the case it crashed on
    PrintCase(*plan, c, state->store);
    std::fprintf(stderr, "reference:\n%s", Describe(reference.answer).c_str());
  }

  for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
    ExecuteOptions options;
    options.deadline = kDeadline;
    options.scheduler = scheduler;
    options.offload_rows = c.offload_rows;
    ExecutionResult result =
        state->Execute(compiled, RequestInputs{c.params, c.viewer_id}, options);
    PlanAnswer got = AnswerOf(result, *compiled);
    std::optional<std::string> diff = Difference(reference.answer, reference.error_codes, got);
    if (diff && result.elapsed_us >= std::chrono::microseconds(kDeadline).count()) {
      // The request's deadline is wall-clock time: on a saturated machine (the fuzzer runs at a
      // low priority beside builds) a case can be starved past it. A hang reaches it again.
      std::fprintf(stderr, "plan_fuzz: a run reached the request's deadline; running it again\n");
      result = state->Execute(compiled, RequestInputs{c.params, c.viewer_id}, options);
      got = AnswerOf(result, *compiled);
      diff = Difference(reference.answer, reference.error_codes, got);
    }
    if (diff) {
      const char* name = scheduler == Scheduler::kAsync ? "async" : "sync";
      std::fprintf(stderr, "\nplan_fuzz: the %s scheduler and the reference differ: %s\n", name,
                   diff->c_str());
      PrintCase(*plan, c, state->store);
      std::fprintf(stderr, "reference:\n%s%s scheduler:\n%s", Describe(reference.answer).c_str(),
                   name, Describe(got).c_str());
      if (result.error) std::fprintf(stderr, "  message: %s\n", result.error->message.c_str());
      std::abort();
    }
  }
  // The keys this input made go with it: an input that frees what it allocates is not run again
  // for libFuzzer's leak check, which scans the whole heap.
  state->store.Clear();
  return 0;
}
