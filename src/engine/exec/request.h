// Request: one execution of a compiled plan (executor.h), from its first node to its settled
// outcome.
//
// Per node it keeps the rows (in the node's own arena, so that a node's CPU work can run on a pool
// thread while other nodes of the request allocate on the loop), how many inputs are still
// running, and the explain report. A node's work is its op's run function (exec/op_runs.h,
// beside the op table plan/op_table.h), given a NodeContext; what a `skip` node yields when it
// degrades is its op's degrade rule. After every node, the rows are checked against the compiled
// node (every output key has a column of its type; in debug builds also the selection is in
// range): a broken invariant fails the request as `internal` rather than reaching a kernel. The
// request settles when every node has finished (normally or degraded), when a `fail` node fails,
// or at the deadline, whichever comes first; what is still running then is cancelled.
//
//   node:  waiting ──inputs done──▶ running ──▶ finished (ok | degraded)
//                                     │            └── failed: the request fails
//                                     └── deadline: timed out (resolved by the degrade rules)
//
// Which node runs when is the scheduler's: Request is abstract, and each scheduler is a subclass
// (exec/schedulers.cpp), chosen once by Request::Make from ExecuteOptions::scheduler. It says
// which nodes start first (StartNodes), what a finished node starts (NodeFinished), whether a
// node may tell its rows' ids early (ListenForIds), and which EndpointRoutes the nodes send
// through:
//   - AsyncRequest spawns a node into the request's TaskScope when its last input finishes, and
//     starts a node that reads only its input's ids (follow, media) as soon as the input tells
//     they are final (viewer at once, follow after its lists); such a node's outcome waits for
//     the input's: it stands if the input finished normally (its rows are the ones the node
//     read), and the node runs again on the input's final rows otherwise (RunNode). It sends
//     pipelined, through the feature caches.
//   - SyncRequest runs the nodes one by one in order, each sending one command at a time, past
//     the feature caches.
//
// Thread affinity: the shard's loop thread; a node's CPU work may run on a pool thread over its
// own arena and its finished inputs. Ownership: owns the arenas (handed to the result), the node
// tasks (its TaskScope) and the reports; borrows the endpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/node_context.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::engine {

class Request {
 public:
  // A request scheduled by `options.scheduler`.
  static std::unique_ptr<Request> Make(std::shared_ptr<const CompiledPlan> plan,
                                       RequestInputs inputs, const EndpointSet& endpoints,
                                       ExecuteOptions options, rt::CancelToken parent);
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  virtual ~Request() = default;

  // Runs the request to its outcome, then cancels and waits for what is left.
  rt::Task<void> Run();
  ExecutionResult TakeResult();

 protected:
  struct NodeState {
    Arena* arena = nullptr;
    const CandidateSet* rows = nullptr;
    std::size_t inputs_left = 0;
    bool started = false;
    bool finished = false;  // finished normally or degraded, before the request settled
    rt::Event done;         // set when it finishes (normally or degraded)
    // Started before its input finished, on the input's rows whose ids were known (IdsKnown).
    const CandidateSet* early_input = nullptr;
    // While such an early run works: cancels it (the input ended with other rows), and whether
    // that happened.
    rt::CancelSource* early_cancel = nullptr;
    bool early_invalidated = false;
    NodeReport report;
  };

  // `endpoints`: the routes the scheduler sends through (borrowed).
  Request(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
          const EndpointRoutes& endpoints, ExecuteOptions options, rt::CancelToken parent);

  // The scheduler (loop thread). Starts the first nodes, spawning them into scope_ (a spawned
  // node runs at once, and may finish inline).
  virtual void StartNodes() = 0;
  // Node i finished (normally or degraded) and the request has not settled: starts what waited
  // for it, if this scheduler starts nodes as their inputs finish.
  virtual void NodeFinished(std::size_t i) = 0;
  // Sets a node's NodeContext::ids_known, if this scheduler starts nodes on their input's ids.
  virtual void ListenForIds(NodeContext& context) = 0;

  // Runs node i to its outcome (the request's state then says it).
  rt::Task<void> RunNode(std::size_t i);
  // Starts `task` in the request's TaskScope (cancelled when the request settles).
  void Spawn(rt::Task<void> task) { scope_.Spawn(std::move(task)); }
  // The request has its outcome: nothing more starts.
  bool settled() const noexcept { return settled_flag_; }

  std::shared_ptr<const CompiledPlan> plan_;
  std::vector<NodeState> nodes_;

 private:
  // Waits for the outcome until the deadline; true when the deadline came first.
  rt::Task<bool> AwaitSettled();
  // Finishes node i with the rows of its match in ExecuteOptions::shared.
  void TakeShared(std::size_t i);
  // The node's work by its op's execution: a coroutine on the loop, or CPU work inline or on
  // the CPU pool.
  rt::Task<const CandidateSet*> Work(NodeContext& node);
  // Work under the node's own timeout, if it has one (DeadlineExceeded past it).
  rt::Task<const CandidateSet*> TimedWork(NodeContext& node, std::optional<rt::Duration> timeout);
  rt::Task<const CandidateSet*> Cpu(NodeContext& node);

  // Outcomes of a node (loop thread).
  void Finish(std::size_t i, const CandidateSet* rows, NodeStatus status);
  void Degrade(std::size_t i, DegradeReason reason, std::string message);
  void FailRequest(std::size_t i, ErrorCode code, std::string message);
  void ResolveAtDeadline();
  // The rows a degraded node yields, by its op's degrade rule.
  const CandidateSet* DegradedRows(std::size_t i);
  // Rows with a column (empty) of each of the node's output keys.
  const CandidateSet* EmptyRows(std::size_t i);

  std::int64_t NowUs() const;
  // Before the result leaves: the outputs' pending columns resolved over their rows, and each
  // source's explain given the count of its pending values that did not parse (lazy decoding).
  void ResolveOutputs();

  // What the result's rows may point into, kept alive with them: the arenas, and the request's
  // inputs (a vm writing a string param makes a column whose values point into the param).
  struct Memory {
    explicit Memory(RequestInputs in) : inputs(std::move(in)) {}
    RequestInputs inputs;
    std::deque<Arena> arenas;
    std::shared_ptr<void> shared;  // the memory of ExecuteOptions::shared's rows
  };
  const EndpointRoutes& endpoints_;  // as the scheduler sends
  ExecuteOptions options_;
  std::int64_t start_ns_;
  std::int64_t deadline_ns_;
  std::shared_ptr<Memory> memory_;
  // Per node: the node of ExecuteOptions::shared whose rows it takes (MatchSharedNodes), or -1.
  std::vector<std::ptrdiff_t> shared_from_;
  std::size_t unfinished_;
  std::optional<ExecutionError> error_;
  bool settled_flag_ = false;
  rt::Event settled_;
  rt::TaskScope scope_;  // last: node tasks go before what they use
};

}  // namespace rankd::engine
