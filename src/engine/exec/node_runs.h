// The ops' run functions (bound to each op in exec/op_runs.h): how each op's node does its work,
// given its NodeContext (exec/node_context.h). Redis sources and waits are coroutines on the
// shard's loop; CPU runs are plain functions that may run on a CPU pool thread (over the node's
// own arena and its finished inputs) and check their cancellation token as they go.
//
// Thread affinity: async runs on the shard's loop; CPU runs on the loop or a pool thread, one
// thread at a time. Ownership: what a run makes lives in the node's arena.
#pragma once

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

class CandidateSet;
struct NodeContext;

using AsyncNodeRun = rt::Task<const CandidateSet*> (*)(NodeContext& node);
using CpuNodeRun = const CandidateSet* (*)(const NodeContext& node, rt::CancelToken token);

// Redis sources (exec/redis_nodes.cpp).
rt::Task<const CandidateSet*> RunViewerNode(NodeContext& node);
rt::Task<const CandidateSet*> RunUserListNode(NodeContext& node);  // follow, recommendation
rt::Task<const CandidateSet*> RunIdListNode(NodeContext& node);    // media, fetch_list
rt::Task<const CandidateSet*> RunFetchFeaturesNode(NodeContext& node);
rt::Task<const CandidateSet*> RunExcludeSeenNode(NodeContext& node);
// The sleep test op (exec/cpu_nodes.cpp).
rt::Task<const CandidateSet*> RunSleepNode(NodeContext& node);

// CPU nodes (exec/cpu_nodes.cpp).
const CandidateSet* RunFixedSourceNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunVmNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunFilterNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunSortNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunTakeNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunTopkNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunDedupeNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunDiversifyNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunDecayNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunConcatNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunInsertNode(const NodeContext& node, rt::CancelToken token);
const CandidateSet* RunBusyCpuNode(const NodeContext& node, rt::CancelToken token);

}  // namespace rankd::engine
