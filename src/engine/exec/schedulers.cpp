// The two schedulers of a Request (request.h), each a subclass, chosen once by Request::Make:
// AsyncRequest (the default) and SyncRequest (the benchmarks' baseline). Same answers; what
// differs is when each node runs and how its commands go out (docs/engine.md, "Execution").
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "exec/request.h"
#include "plan/op_table.h"

namespace rankd::engine {
namespace {

// Each node runs as soon as its inputs are done, as a task of its own, so independent branches
// run at once; a node that reads only its input's ids starts as soon as those are final
// (NodeContext::ids_known). Nodes send every command of a batch at once, through their key
// schema's feature cache where it has one (EndpointSet::pipelined).
// Thread affinity and ownership: Request's.
class AsyncRequest final : public Request {
 public:
  AsyncRequest(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
               const EndpointSet& endpoints, ExecuteOptions options, rt::CancelToken parent)
      : Request(std::move(plan), std::move(inputs), endpoints.pipelined(), options, parent) {}

 private:
  void StartNodes() override {
    // The roots are listed before any is spawned: a spawned node runs at once, and one that
    // finishes inline spawns its dependents itself, which a scan still under way would start
    // again.
    std::vector<std::size_t> roots;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].inputs_left == 0) roots.push_back(i);
    }
    for (std::size_t i : roots) Spawn(RunNode(i));
  }

  void NodeFinished(std::size_t i) override {
    for (std::size_t d : plan_->nodes()[i].dependents) {
      if (--nodes_[d].inputs_left == 0 && !nodes_[d].started) Spawn(RunNode(d));
    }
  }

  void ListenForIds(NodeContext& context) override {
    context.ids_known = &AsyncRequest::OnIdsKnown;
    context.owner = this;
  }

  // NodeContext::ids_known: starts the dependents of `node` that read only its rows' ids, with
  // those rows, unless they started already.
  static void OnIdsKnown(void* request, const CompiledNode& node, const CandidateSet& rows) {
    auto* self = static_cast<AsyncRequest*>(request);
    if (self->settled()) return;
    for (std::size_t d : node.dependents) {
      const CompiledNode& dependent = self->plan_->nodes()[d];
      NodeState& st = self->nodes_[d];
      if (!dependent.op->reads_input_ids_only || dependent.inputs.size() != 1 || st.started) {
        continue;
      }
      st.early_input = &rows;
      self->Spawn(self->RunNode(d));
    }
  }
};

// The same nodes one at a time in topological order (the plan's), each node's own timeout as in
// the async scheduler and the request's deadline over all of them; nodes send one command at a
// time, each awaited before the next, without the feature caches (EndpointSet::one_by_one).
// Thread affinity and ownership: Request's.
class SyncRequest final : public Request {
 public:
  SyncRequest(std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
              const EndpointSet& endpoints, ExecuteOptions options, rt::CancelToken parent)
      : Request(std::move(plan), std::move(inputs), endpoints.one_by_one(), options, parent) {}

 private:
  void StartNodes() override { Spawn(RunInOrder()); }
  // The next node starts when RunInOrder's await of this one returns.
  void NodeFinished(std::size_t) override {}
  // No node starts before its inputs have finished.
  void ListenForIds(NodeContext&) override {}

  rt::Task<void> RunInOrder() {
    for (std::size_t i = 0; i < nodes_.size() && !settled(); ++i) co_await RunNode(i);
  }
};

}  // namespace

std::unique_ptr<Request> Request::Make(std::shared_ptr<const CompiledPlan> plan,
                                       RequestInputs inputs, const EndpointSet& endpoints,
                                       ExecuteOptions options, rt::CancelToken parent) {
  switch (options.scheduler) {
    case Scheduler::kAsync:
      return std::make_unique<AsyncRequest>(std::move(plan), std::move(inputs), endpoints, options,
                                            parent);
    case Scheduler::kSync:
      return std::make_unique<SyncRequest>(std::move(plan), std::move(inputs), endpoints, options,
                                           parent);
  }
  throw std::invalid_argument("unknown scheduler");
}

}  // namespace rankd::engine
