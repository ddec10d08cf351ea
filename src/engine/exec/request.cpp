// Request: scheduling and outcomes (request.h). The node work itself is in redis_nodes.cpp and
// cpu_nodes.cpp.
#include "request.h"

#include <vector>

#include "rankd/engine/cpu_ops.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::engine {
namespace {

// A node's arena starts small: most nodes of a request hold a few hundred rows.
constexpr std::size_t kNodeArenaBytes = 16 * 1024;

}  // namespace

Request::Request(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                 const EndpointSet& endpoints, ExecuteOptions options, rt::CancelToken parent)
    : plan_(std::move(plan)),
      inputs_(std::move(inputs)),
      endpoints_(endpoints),
      options_(options),
      start_ns_(rt::MonotonicNanos()),
      deadline_ns_(start_ns_ + options.deadline.count()),
      arenas_(std::make_shared<std::deque<Arena>>()),
      nodes_(plan_->nodes().size()),
      unfinished_(plan_->nodes().size()),
      scope_(parent) {
  arenas_->emplace_back(kNodeArenaBytes);  // the request's own (empty results)
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].arena = &arenas_->emplace_back(kNodeArenaBytes);
    nodes_[i].inputs_left = plan_->nodes()[i].inputs.size();
  }
}

std::int64_t Request::NowUs() const { return (rt::MonotonicNanos() - start_ns_) / 1000; }

rt::Task<void> Request::Run() {
  if (options_.scheduler == Scheduler::kSync) {
    co_await RunSync();
  } else {
    co_await RunAsync();
  }
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

rt::Task<void> Request::RunAsync() {
  // The roots are listed before any is spawned: a spawned node runs at once, and one that
  // finishes inline spawns its dependents itself, which a scan still under way would start again.
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].inputs_left == 0) roots.push_back(i);
  }
  for (std::size_t i : roots) scope_.Spawn(RunNode(i));
  if (co_await AwaitSettled()) ResolveAtDeadline();
}

rt::Task<void> Request::RunSync() {
  // One node at a time, in order; each node's own timeout as in the async scheduler, and the
  // request's deadline over all of them.
  const auto all = [](Request* self) -> rt::Task<void> {
    for (std::size_t i = 0; i < self->nodes_.size() && !self->settled_flag_; ++i) {
      co_await self->RunNode(i);
    }
  };
  scope_.Spawn(all(this));
  if (co_await AwaitSettled()) ResolveAtDeadline();
}

rt::Task<void> Request::RunNode(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  const Node& node = *c.node;
  NodeState& st = nodes_[i];
  st.report.start_us = NowUs();
  for (std::size_t input : c.inputs) st.report.rows_in += nodes_[input].rows->size();
  const CandidateSet* rows = nullptr;
  DegradeReason reason = DegradeReason::kNone;
  std::string message;
  std::string fail_code;
  try {
    if (node.timeout_ms) {
      rows = co_await rt::WithTimeout(std::chrono::milliseconds(*node.timeout_ms), Work(i));
    } else {
      rows = co_await Work(i);
    }
  } catch (const rt::DeadlineExceeded&) {
    reason = DegradeReason::kTimeout;
    message = "node " + node.id + " timed out after " + std::to_string(*node.timeout_ms) + " ms";
    fail_code = "deadline_exceeded";
  } catch (const rt::CancelledError&) {
    co_return;  // the request settled (deadline, a failure, or the caller gave up)
  } catch (const UpstreamError& e) {
    reason = DegradeReason::kError;
    message = "node " + node.id + ": " + e.what();
    fail_code = "upstream_error";
  } catch (const std::exception& e) {
    reason = DegradeReason::kError;
    message = "node " + node.id + ": " + e.what();
    fail_code = "internal";
  }
  if (settled_flag_) co_return;
  if (reason == DegradeReason::kNone) {
    Finish(i, rows, NodeStatus::kOk);
  } else if (node.on_error == OnError::kSkip) {
    Degrade(i, reason, std::move(message));
  } else {
    st.report.reason = reason;
    FailRequest(i, std::move(fail_code), std::move(message));
  }
}

void Request::Finish(std::size_t i, const CandidateSet* rows, NodeStatus status) {
  NodeState& st = nodes_[i];
  st.rows = rows;
  st.finished = true;
  st.report.status = status;
  st.report.end_us = NowUs();
  st.report.rows_out = rows->size();
  if (--unfinished_ == 0) {
    settled_flag_ = true;
    settled_.Set();
    return;
  }
  if (options_.scheduler != Scheduler::kAsync) return;
  for (std::size_t d : plan_->nodes()[i].dependents) {
    if (--nodes_[d].inputs_left == 0) scope_.Spawn(RunNode(d));
  }
}

void Request::Degrade(std::size_t i, DegradeReason reason, std::string message) {
  NodeState& st = nodes_[i];
  st.report.reason = reason;
  st.report.message = std::move(message);
  Finish(i, DegradedRows(i), NodeStatus::kDegraded);
}

void Request::FailRequest(std::size_t i, std::string code, std::string message) {
  NodeState& st = nodes_[i];
  st.report.status = NodeStatus::kFailed;
  st.report.message = message;
  st.report.end_us = NowUs();
  error_ = ExecutionError{std::move(code), std::move(message)};
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
      error_ = ExecutionError{"deadline_exceeded", message};
      break;
    }
    st.report.message = message;
    st.rows = DegradedRows(i);
    st.report.status = NodeStatus::kDegraded;
    st.report.rows_out = st.rows->size();
    if (st.report.start_us >= 0) st.report.end_us = NowUs();
  }
}

const CandidateSet* Request::EmptyRows(Arena& arena) const {
  const Registry& reg = plan_->registry();
  CandidateSet* rows = CandidateSet::Make(arena, reg.keys().size(), 0);
  rows->set_column(reg.id_slot(), Column::Make(arena, ValueType::kInt, 0));
  return rows;
}

const CandidateSet* Request::DegradedRows(std::size_t i) {
  const CompiledNode& c = plan_->nodes()[i];
  Arena& arena = arenas_->front();
  switch (c.node->op) {
    // New candidates from its input: passing the input through would rank other entities.
    case Op::kFollow:
    case Op::kRecommendation:
    case Op::kMedia:
    case Op::kFetchList:
    // Sources: nothing to pass.
    case Op::kViewer:
    case Op::kFixedSource:
      return EmptyRows(arena);
    case Op::kConcat: {
      // The inputs that finished (normally or degraded) before it was cut.
      std::vector<const CandidateSet*> done;
      for (std::size_t input : c.inputs) {
        if (nodes_[input].finished) done.push_back(nodes_[input].rows);
      }
      if (done.empty()) return EmptyRows(arena);
      if (done.size() == 1) return done[0];
      return RunConcat(*done[0], *done[1], arena);
    }
    default:
      return nodes_[c.inputs[0]].rows;  // its input, unchanged
  }
}

ExecutionResult Request::TakeResult() {
  ExecutionResult result;
  result.error = error_;
  result.elapsed_us = NowUs();
  result.nodes.reserve(nodes_.size());
  for (NodeState& st : nodes_) result.nodes.push_back(std::move(st.report));
  if (!error_) {
    for (std::size_t out : plan_->outputs()) {
      result.outputs.push_back(ExecutionResult::Output{&plan_->nodes()[out], nodes_[out].rows});
    }
  }
  result.memory = arenas_;
  return result;
}

rt::Task<const CandidateSet*> Request::Work(std::size_t i) {
  switch (plan_->nodes()[i].node->op) {
    case Op::kViewer:
      co_return co_await Viewer(i);
    case Op::kFollow:
    case Op::kRecommendation:
      co_return co_await Lists(i, true);
    case Op::kMedia:
    case Op::kFetchList:
      co_return co_await Lists(i, false);
    case Op::kFetchFeatures:
      co_return co_await FetchFeatures(i);
    case Op::kSleep:
      co_await rt::SleepFor(std::chrono::milliseconds(plan_->nodes()[i].node->params.ms));
      co_return &Input(i, 0);
    default:
      co_return co_await Cpu(i);
  }
}

rt::Task<ExecutionResult> ExecutePlan(std::shared_ptr<const CompiledPlan> plan,
                                      RequestInputs inputs, const EndpointSet& endpoints,
                                      ExecuteOptions options) {
  Request request(std::move(plan), std::move(inputs), endpoints, options,
                  co_await rt::CurrentCancelToken());
  co_await request.Run();
  co_return request.TakeResult();
}

std::string_view NodeStatusName(NodeStatus status) noexcept {
  switch (status) {
    case NodeStatus::kNotRun:
      return "not_run";
    case NodeStatus::kOk:
      return "ok";
    case NodeStatus::kDegraded:
      return "degraded";
    case NodeStatus::kFailed:
      return "failed";
  }
  return "?";
}

std::string_view DegradeReasonName(DegradeReason reason) noexcept {
  switch (reason) {
    case DegradeReason::kNone:
      return "";
    case DegradeReason::kTimeout:
      return "timeout";
    case DegradeReason::kError:
      return "error";
  }
  return "?";
}

}  // namespace rankd::engine
