// Request: a node's run and its outcomes (request.h); the schedulers, which decide when each node
// runs, are in exec/schedulers.cpp. The nodes' work is their ops' run functions
// (exec/node_runs.h), bound to each op in exec/op_runs.h.
#include "exec/request.h"

#include <time.h>

#include <vector>

#include "exec/op_runs.h"
#include "exec/verify_rows.h"
#include "plan/op_table.h"
#include "rankd/engine/columns/resolve.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/debug_check.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/offload.h"

namespace rankd::engine {
namespace {

// A node's arena starts small: most nodes of a request hold a few hundred rows.
constexpr std::size_t kNodeArenaBytes = 16 * 1024;

std::int64_t ThreadCpuNanos() {
  timespec ts{};
  // CLOCK_THREAD_CPUTIME_ID cannot fail on Linux for the calling thread; a zero would only make
  // one explain figure zero.
  (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

Request::Request(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                 const EndpointRoutes& endpoints, ExecuteOptions options, rt::CancelToken parent)
    : plan_(std::move(plan)),
      nodes_(plan_->nodes().size()),
      endpoints_(endpoints),
      options_(options),
      start_ns_(rt::MonotonicNanos()),
      deadline_ns_(start_ns_ + options.deadline.count()),
      memory_(std::make_shared<Memory>(std::move(inputs))),
      unfinished_(plan_->nodes().size()),
      scope_(parent) {
  memory_->arenas.emplace_back(kNodeArenaBytes);  // the request's own (degraded and empty results)
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].arena = &memory_->arenas.emplace_back(kNodeArenaBytes);
    nodes_[i].inputs_left = plan_->nodes()[i].inputs.size();
  }
  if (options_.shared != nullptr) {
    shared_from_ = MatchSharedNodes(*plan_, memory_->inputs.params, *options_.shared);
    memory_->shared = options_.shared->result.memory;
  }
}

std::int64_t Request::NowUs() const { return (rt::MonotonicNanos() - start_ns_) / 1000; }

rt::Task<void> Request::Run() {
  StartNodes();
  if (co_await AwaitSettled()) ResolveAtDeadline();
  // Whatever still runs is cut short: Redis calls are abandoned, CPU work stops at its next check.
  scope_.RequestCancel();
  try {
    co_await scope_.Join();
  } catch (const std::exception&) {
    // Node tasks end quietly; a join cut short (the caller is cancelled) leaves the rest to the
    // scope's destructor.
  }
}

rt::Task<bool> Request::AwaitSettled() {
  bool deadline = false;
  try {
    co_await settled_.WaitUntil(rt::TimePoint(rt::Duration(deadline_ns_)));
  } catch (const rt::DeadlineExceeded&) {
    deadline = true;
  }
  co_return deadline;
}

rt::Task<void> Request::RunNode(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  const Node& node = *c.node;
  NodeState& st = nodes_[i];
  st.started = true;
  st.report.start_us = NowUs();
  if (!shared_from_.empty() && shared_from_[i] >= 0) {
    TakeShared(i);
    co_return;
  }
  const CandidateSet* rows = nullptr;
  DegradeReason reason = DegradeReason::kNone;
  std::string message;
  ErrorCode fail_code = ErrorCode::kInternal;
  // The node's own timeout wins over the default for nodes that declare none.
  const std::optional<rt::Duration> timeout =
      node.timeout_ms ? std::optional<rt::Duration>(std::chrono::milliseconds(*node.timeout_ms))
                      : options_.default_node_timeout;
  // A node started on its input's ids runs again if the input does not finish with those rows.
  for (bool early = st.early_input != nullptr;; early = false) {
    NodeContext context{*plan_, c, {}, *st.arena, memory_->inputs, endpoints_, st.report};
    context.capture = options_.capture;
    ListenForIds(context);
    st.report.rows_in = 0;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      const CandidateSet* input = early ? st.early_input : nodes_[c.inputs[k]].rows;
      // Lazy decoding: the values it reads are parsed for its input's rows before it runs (here,
      // on the loop: the count of values that do not parse is the request's, and its CPU work
      // may run on a pool thread).
      context.inputs[k] = ResolveKeys(*input, c.reads_keys, c.op->reads_every_key, *st.arena);
      st.report.rows_in += context.inputs[k]->size();
    }
    rows = nullptr;
    reason = DegradeReason::kNone;
    message.clear();
    fail_code = ErrorCode::kInternal;
    // An early run is cut short as soon as its input ends with other rows (Finish): it may be
    // stalled on keys the run on the input's final rows never reads.
    rt::CancelSource early_cancel(co_await rt::CurrentCancelToken());
    rt::Task<const CandidateSet*> work = TimedWork(context, timeout);
    if (early) {
      work.promise().set_cancel_token(early_cancel.token());
      st.early_cancel = &early_cancel;
    }
    struct ForgetCancel {
      NodeState& st;
      ~ForgetCancel() { st.early_cancel = nullptr; }
    } forget{st};
    try {
      rows = co_await std::move(work);
    } catch (const rt::DeadlineExceeded&) {
      reason = DegradeReason::kTimeout;
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
          timeout.value_or(rt::Duration::zero()));
      message = "node " + node.id + " timed out after " + std::to_string(ms.count()) + " ms";
      fail_code = ErrorCode::kDeadlineExceeded;
    } catch (const rt::CancelledError&) {
      if (!st.early_invalidated || settled_flag_) co_return;  // the request settled
      // The input ended with other rows while this early run went on: run on those.
      st.early_invalidated = false;
      st.early_input = nullptr;
      continue;
    } catch (const UpstreamError& e) {
      reason = DegradeReason::kError;
      message = "node " + node.id + ": " + e.what();
      fail_code = ErrorCode::kUpstreamError;
    } catch (const std::exception& e) {
      reason = DegradeReason::kError;
      message = "node " + node.id + ": " + e.what();
    }
    st.early_cancel = nullptr;  // the run is over: the wait below decides whether it stands
    if (settled_flag_ || !early) break;
    // Whatever the outcome, it is the node's only if its input ends with the rows it read.
    NodeState& input = nodes_[c.inputs[0]];
    try {
      co_await input.done.Wait();
    } catch (const rt::CancelledError&) {
      co_return;  // the request settled first
    }
    if (settled_flag_) co_return;
    // The rows it read are the input's only if the input finished normally with them: not if
    // it degraded, nor if it ran again itself (its own input degraded) and made new rows.
    if (input.report.status == NodeStatus::kOk && input.rows == st.early_input) break;
    st.early_input = nullptr;  // run again on the rows the input ended with
  }
  if (settled_flag_) co_return;
  if (reason == DegradeReason::kNone) {
    if (std::optional<std::string> broken = VerifyRows(c, *rows, plan_->registry())) {
      // A kernel's output breaks the node's contract: fail the request, never pass it on.
      st.report.reason = DegradeReason::kError;
      FailRequest(i, ErrorCode::kInternal, "node " + node.id + ": " + *broken);
      co_return;
    }
    Finish(i, rows, NodeStatus::kOk);
  } else if (node.on_error == OnError::kSkip) {
    Degrade(i, reason, std::move(message));
  } else {
    st.report.reason = reason;
    FailRequest(i, fail_code, std::move(message));
  }
}

rt::Task<const CandidateSet*> Request::TimedWork(NodeContext& node,
                                                 std::optional<rt::Duration> timeout) {
  if (!timeout) co_return co_await Work(node);
  const std::int64_t deadline_ns = rt::MonotonicNanos() + timeout->count();
  const CandidateSet* rows = co_await rt::WithTimeout(*timeout, Work(node));
  // Rows that came at or after the timeout are timed out, the timer fired or not (a loop held
  // past it could not run the timer): the outcome follows when the rows came.
  if (rt::MonotonicNanos() >= deadline_ns) throw rt::DeadlineExceeded();
  co_return rows;
}

rt::Task<const CandidateSet*> Request::Work(NodeContext& node) {
  const ops::OpSpec& op = *node.node.op;
  switch (op.execution) {
    case ops::Execution::kRedisSource:
    case ops::Execution::kWait:
      co_return co_await OpRunOf(op.op).run_async(node);
    case ops::Execution::kCpu:
    case ops::Execution::kHeavyCpu:
      co_return co_await Cpu(node);
  }
  throw std::logic_error("op " + std::string(op.name) + " has no execution");
}

rt::Task<const CandidateSet*> Request::Cpu(NodeContext& node) {
  const ops::OpSpec& op = *node.node.op;
  NodeReport& report = node.report;
  // A vm or filter weighs its rows by its program's per-row cost (a tree model's trees).
  const std::size_t weight = node.node.program != nullptr ? RowWeight(*node.node.program) : 1;
  const bool heavy =
      op.execution == ops::Execution::kHeavyCpu || report.rows_in * weight > options_.offload_rows;
  if (!heavy) {
    const rt::CancelToken token = co_await rt::CurrentCancelToken();
    token.ThrowIfStopRequested();
    const std::int64_t cpu = ThreadCpuNanos();
    const CandidateSet* rows = OpRunOf(op.op).run_cpu(node, token);
    report.cpu_us += (ThreadCpuNanos() - cpu) / 1000;
    co_return rows;
  }
  report.on_pool = true;
  std::int64_t cpu_ns = 0;
  rt::CpuPool& pool = options_.cpu_pool != nullptr ? *options_.cpu_pool : rt::CpuPool::Default();
  const CandidateSet* rows =
      co_await rt::OffloadCpu(pool, [&node, &op, &cpu_ns](rt::CancelToken token) {
        const std::int64_t start = ThreadCpuNanos();
        struct Account {
          std::int64_t start;
          std::int64_t* total;
          ~Account() { *total = ThreadCpuNanos() - start; }
        } account{start, &cpu_ns};
        token.ThrowIfStopRequested();
        return OpRunOf(op.op).run_cpu(node, token);
      });
  report.cpu_us += cpu_ns / 1000;
  co_return rows;
}

void Request::TakeShared(std::size_t i) {
  const std::size_t from = static_cast<std::size_t>(shared_from_[i]);
  const ExecutionResult& work = options_.shared->result;
  const CandidateSet* rows = work.node_rows[from];
  NodeState& st = nodes_[i];
  st.report.shared = true;
  st.report.saved_redis_commands = work.nodes[from].redis_commands;
  for (const std::size_t input : plan_->nodes()[i].inputs)
    st.report.rows_in += nodes_[input].rows->size();
  // The same work key has the same output keys: the rows meet this node's contract.
  RANKD_D_ASSERT(!VerifyRows(plan_->nodes()[i], *rows, plan_->registry()));
  Finish(i, rows, NodeStatus::kOk);
}

void Request::Finish(std::size_t i, const CandidateSet* rows, NodeStatus status) {
  NodeState& st = nodes_[i];
  st.rows = rows;
  st.finished = true;
  st.report.status = status;
  st.report.end_us = NowUs();
  st.report.rows_out = rows->size();
  st.done.Set();
  // Dependents started early on other rows than these are cut short, to run on these.
  for (std::size_t d : plan_->nodes()[i].dependents) {
    NodeState& dependent = nodes_[d];
    if (dependent.early_cancel == nullptr) continue;
    if (status == NodeStatus::kOk && rows == dependent.early_input) continue;
    dependent.early_invalidated = true;
    dependent.early_cancel->RequestCancel();
  }
  if (--unfinished_ == 0) {
    settled_flag_ = true;
    settled_.Set();
    return;
  }
  NodeFinished(i);
}

void Request::Degrade(std::size_t i, DegradeReason reason, std::string message) {
  NodeState& st = nodes_[i];
  st.report.reason = reason;
  st.report.message = std::move(message);
  Finish(i, DegradedRows(i), NodeStatus::kDegraded);
}

void Request::FailRequest(std::size_t i, ErrorCode code, std::string message) {
  NodeState& st = nodes_[i];
  st.report.status = NodeStatus::kFailed;
  st.report.message = message;
  st.report.end_us = NowUs();
  error_ = ExecutionError{code, std::move(message)};
  settled_flag_ = true;
  settled_.Set();
}

void Request::ResolveAtDeadline() {
  settled_flag_ = true;
  // Every unfinished node, started or not, timed out: in order, so each sees its inputs resolved.
  for (std::size_t i = 0; i < nodes_.size() && !error_; ++i) {
    NodeState& st = nodes_[i];
    if (st.finished) continue;
    const Node& node = *plan_->nodes()[i].node;
    const std::string message = "node " + node.id + " did not finish by the request's deadline (" +
                                std::to_string(options_.deadline.count() / 1'000'000) + " ms)";
    st.report.reason = DegradeReason::kTimeout;
    if (node.on_error == OnError::kFail) {
      st.report.status = NodeStatus::kFailed;
      st.report.message = message;
      error_ = ExecutionError{ErrorCode::kDeadlineExceeded, message};
      break;
    }
    st.report.message = message;
    st.rows = DegradedRows(i);
    st.report.status = NodeStatus::kDegraded;
    st.report.rows_out = st.rows->size();
    if (st.report.start_us >= 0) st.report.end_us = NowUs();
  }
}

const CandidateSet* Request::EmptyRows(std::size_t i) {
  const Registry& reg = plan_->registry();
  Arena& arena = memory_->arenas.front();
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), 0);
  for (const KeyRef& key : plan_->nodes()[i].output_keys)
    rows->set_column(key.slot, Column::Make(arena, key.type, 0));
  return rows;
}

const CandidateSet* Request::DegradedRows(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  Arena& arena = memory_->arenas.front();
  const CandidateSet* rows = nullptr;
  switch (c.op->degrade) {
    case ops::DegradeRule::kNoRows:
      return EmptyRows(i);
    case ops::DegradeRule::kPassInput: {
      const CandidateSet& input = *nodes_[c.inputs[0]].rows;
      rows = &input;
      // The keys it would have added that its input lacks read as null: all-null columns.
      CandidateSet* with_nulls = nullptr;
      for (const KeyRef& key : c.output_keys) {
        if (input.column(key.slot) != nullptr) continue;
        if (with_nulls == nullptr) with_nulls = CandidateSet::CopyOf(arena, input);
        with_nulls->set_column(key.slot, Column::Make(arena, key.type, input.physical_rows()));
      }
      if (with_nulls != nullptr) rows = with_nulls;
      break;
    }
    case ops::DegradeRule::kKeepFinishedInputs: {
      std::vector<const CandidateSet*> done;
      for (std::size_t input : c.inputs) {
        // Concatenating copies every key's values: they are resolved first (lazy decoding).
        if (nodes_[input].finished)
          done.push_back(ResolveKeys(*nodes_[input].rows, {}, true, arena));
      }
      if (done.empty()) return EmptyRows(i);
      rows = done.size() == 1 ? done[0] : RunConcat(*done[0], *done[1], arena);
      // One input's rows lack the keys only the other had: all-null columns for them.
      CandidateSet* with_nulls = nullptr;
      for (const KeyRef& key : c.output_keys) {
        if (rows->column(key.slot) != nullptr) continue;
        if (with_nulls == nullptr) with_nulls = CandidateSet::CopyOf(arena, *rows);
        with_nulls->set_column(key.slot, Column::Make(arena, key.type, rows->physical_rows()));
      }
      if (with_nulls != nullptr) rows = with_nulls;
      break;
    }
  }
  RANKD_D_ASSERT(!VerifyRows(c, *rows, plan_->registry()));
  return rows;
}

void Request::ResolveOutputs() {
  if (error_) return;
  // The response writes every key of an output's rows: their values are resolved (lazy
  // decoding), in the output node's arena, before they leave the request.
  for (std::size_t out : plan_->outputs()) {
    NodeState& st = nodes_[out];
    if (st.rows == nullptr) continue;
    st.rows = ResolveKeys(*st.rows, {}, true, *st.arena);
    RANKD_D_ASSERT(!HasPendingColumn(*st.rows));  // what leaves the request is never pending
  }
  // Each source's explain counts the values of its pending columns that did not parse when
  // read. A degraded node's rows are not its own; a shared node's are another plan's.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& st = nodes_[i];
    if (st.rows == nullptr || st.report.status != NodeStatus::kOk || st.report.shared) continue;
    for (const KeyRef& field : plan_->nodes()[i].fields) {
      const Column* column = st.rows->column(field.slot);
      if (column != nullptr && column->pending())
        st.report.unparsable_values += column->unparsable();
    }
  }
}

ExecutionResult Request::TakeResult() {
  ResolveOutputs();
  ExecutionResult result;
  result.error = error_;
  result.elapsed_us = NowUs();
  result.nodes.reserve(nodes_.size());
  result.node_rows.reserve(nodes_.size());
  for (NodeState& st : nodes_) {
    result.nodes.push_back(std::move(st.report));
    result.node_rows.push_back(st.finished ? st.rows : nullptr);
  }
  if (!error_) {
    for (std::size_t out : plan_->outputs()) {
      result.outputs.push_back(ExecutionResult::Output{&plan_->nodes()[out], nodes_[out].rows});
    }
  }
  result.memory = memory_;
  return result;
}

}  // namespace rankd::engine
