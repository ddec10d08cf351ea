// NodeContext: what one node's run function (exec/node_runs.h) sees of its request — its compiled
// node, its finished inputs' rows, its own arena, the request's inputs, the endpoints as its
// scheduler sends through them (EndpointRoutes), and its explain report to count into.
//
// Made by the Request (exec/request.h) for each node it runs, in the node's coroutine frame;
// valid until the run returns.
//
// Thread affinity: the shard's loop; a CPU run may read it on a pool thread while the loop does
// not touch the node (it waits for the run). Ownership: borrows everything.
#pragma once

#include <array>
#include <cstddef>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::engine {

struct NodeContext {
  const CompiledPlan& plan;
  const CompiledNode& node;
  std::array<const CandidateSet*, 2> inputs{};  // its inputs' rows, in order (ops read <= 2)
  Arena& arena;
  const RequestInputs& request;
  const EndpointRoutes& endpoints;  // by SchemaRef::endpoint, as its scheduler sends
  NodeReport& report;
  // Told by a source whose output rows and their ids are final before it has read the rest of
  // their keys (viewer at once, follow and recommendation after their lists): the scheduler may
  // then start the nodes that read only those ids (OpSpec::reads_input_ids_only). Null for a
  // scheduler that does not (the sync one).
  void (*ids_known)(void* owner, const CompiledNode& node, const CandidateSet& rows) = nullptr;
  void* owner = nullptr;
  // Where its Redis commands and their replies are recorded (ExecuteOptions::capture), or null:
  // a captured node sends through a CapturingEndpoint (exec/capturing_endpoint.h).
  RequestCapture* capture = nullptr;

  const CandidateSet& input(std::size_t k) const noexcept { return *inputs[k]; }
  void IdsKnown(const CandidateSet& rows) const {
    if (ids_known != nullptr) ids_known(owner, node, rows);
  }
  const Registry& registry() const noexcept { return plan.registry(); }
};

// A Redis failure of a node: a lost connection, an error reply, a reply of the wrong shape, a
// command past its endpoint's command timeout.
class UpstreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rankd::engine
