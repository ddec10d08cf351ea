// Request: one execution of a compiled plan (executor.h), from its first node to its settled
// outcome.
//
// Per node it keeps the rows (in the node's own arena, so that a node's CPU work can run on a pool
// thread while other nodes of the request allocate on the loop), how many inputs are still
// running, and the explain report. A node's work is its op's run function (exec/op_runs.h,
// beside the op table plan/op_table.h), given a NodeContext; what a `skip` node yields when it degrades is its op's
// degrade rule. After every node, the rows are checked against the compiled node (every output
// key has a column of its type; in debug builds also the selection is in range): a broken
// invariant fails the request as `internal` rather than reaching a kernel. The async scheduler
// spawns a node into the request's TaskScope when its last input finishes; the sync scheduler runs
// them one by one; it also starts a node that reads only its input's ids (follow, media) as soon as
// the input tells they are final (viewer at once, follow after its lists), and such a node's
// outcome waits for the input's: it stands if the input finished normally (its rows are the
// ones the node read), and the node runs again on the input's degraded rows otherwise. The
// request settles when every node has finished (normally or degraded), when a
// `fail` node fails, or at the deadline, whichever comes first; what is still running then is
// cancelled.
//
//   node:  waiting ──inputs done──▶ running ──▶ finished (ok | degraded)
//                                     │            └── failed: the request fails
//                                     └── deadline: timed out (resolved by the degrade rules)
//
// Thread affinity: the shard's loop thread; a node's CPU work may run on a pool thread over its
// own arena and its finished inputs. Ownership: owns the arenas (handed to the result), the node
// tasks (its TaskScope) and the reports.
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
  Request(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
          const EndpointSet& endpoints, ExecuteOptions options, rt::CancelToken parent);
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Runs the request to its outcome (either scheduler), then cancels and waits for what is left.
  rt::Task<void> Run();
  ExecutionResult TakeResult();

 private:
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

  rt::Task<void> RunAsync();
  rt::Task<void> RunSync();
  // Waits for the outcome until the deadline; true when the deadline came first.
  rt::Task<bool> AwaitSettled();
  rt::Task<void> RunNode(std::size_t i);
  // Finishes node i with the rows of its match in ExecuteOptions::shared.
  void TakeShared(std::size_t i);
  // NodeContext::ids_known (async scheduler): starts the dependents of `node` that read only its
  // rows' ids, with those rows, unless they started already.
  static void OnIdsKnown(void* request, const CompiledNode& node, const CandidateSet& rows);
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

  std::shared_ptr<const CompiledPlan> plan_;
  // What the result's rows may point into, kept alive with them: the arenas, and the request's
  // inputs (a vm writing a string param makes a column whose values point into the param).
  struct Memory {
    explicit Memory(RequestInputs in) : inputs(std::move(in)) {}
    RequestInputs inputs;
    std::deque<Arena> arenas;
    std::shared_ptr<void> shared;  // the memory of ExecuteOptions::shared's rows
  };
  std::span<Endpoint* const> endpoints_;  // as the scheduler sends
  ExecuteOptions options_;
  std::int64_t start_ns_;
  std::int64_t deadline_ns_;
  std::shared_ptr<Memory> memory_;
  std::vector<NodeState> nodes_;
  // Per node: the node of ExecuteOptions::shared whose rows it takes (MatchSharedNodes), or -1.
  std::vector<std::ptrdiff_t> shared_from_;
  std::size_t unfinished_;
  std::optional<ExecutionError> error_;
  bool settled_flag_ = false;
  rt::Event settled_;
  rt::TaskScope scope_;  // last: node tasks go before what they use
};

}  // namespace rankd::engine
