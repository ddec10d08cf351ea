// The CPU ops' run functions (exec/node_runs.h): fixed_source, vm, filter, sort, take, topk,
// dedupe, concat, busy_cpu (each a thin adapter from the node's context to its kernel in
// cpu_ops.h), and the sleep test op, which waits on the loop.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <variant>

#include "exec/node_context.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/runtime/sleep.h"

namespace rankd::engine {

const CandidateSet* RunFixedSourceNode(const NodeContext& node, rt::CancelToken) {
  const Registry& reg = node.registry();
  return RunFixedSource(node.node.node->params.ids, reg.keys().size(), reg.id_slot(), node.arena);
}

const CandidateSet* RunVmNode(const NodeContext& node, rt::CancelToken) {
  const CompiledNode& c = node.node;
  return RunVm(node.input(0), c.out_key.slot, c.out_key.type, *c.program, node.request.params,
               node.arena);
}

const CandidateSet* RunFilterNode(const NodeContext& node, rt::CancelToken) {
  return RunFilter(node.input(0), *node.node.program, node.request.params, node.arena);
}

const CandidateSet* RunSortNode(const NodeContext& node, rt::CancelToken) {
  return RunSort(node.input(0), node.node.key.slot, node.node.node->params.order, node.arena);
}

namespace {

// take's count or topk's k: the request's value of the param the node reads it from (bound and
// checked within the op's range by BindParams), else the plan's literal.
std::size_t IntParam(const NodeContext& node, std::int64_t literal) {
  std::int64_t n = literal;
  if (const std::optional<std::size_t> slot = node.node.int_param_slot) {
    const std::int64_t* value = std::get_if<std::int64_t>(&node.request.params.values.at(*slot));
    if (value == nullptr) throw std::logic_error("an int param of a node has no int value");
    n = *value;
  }
  return static_cast<std::size_t>(std::max<std::int64_t>(n, 0));
}

}  // namespace

const CandidateSet* RunTakeNode(const NodeContext& node, rt::CancelToken) {
  return RunTake(node.input(0), IntParam(node, node.node.node->params.count), node.arena);
}

const CandidateSet* RunTopkNode(const NodeContext& node, rt::CancelToken) {
  return RunTopk(node.input(0), node.node.key.slot, IntParam(node, node.node.node->params.k),
                 node.arena);
}

const CandidateSet* RunDedupeNode(const NodeContext& node, rt::CancelToken) {
  return RunDedupe(node.input(0), node.node.key.slot, node.arena);
}

const CandidateSet* RunDiversifyNode(const NodeContext& node, rt::CancelToken) {
  const NodeParams& p = node.node.node->params;
  return RunDiversify(node.input(0), node.node.key.slot, static_cast<std::size_t>(p.max_per_window),
                      static_cast<std::size_t>(p.window), node.arena);
}

const CandidateSet* RunConcatNode(const NodeContext& node, rt::CancelToken) {
  return RunConcat(node.input(0), node.input(1), node.arena);
}

const CandidateSet* RunDecayNode(const NodeContext& node, rt::CancelToken) {
  const CompiledNode& c = node.node;
  return RunDecay(node.input(0), c.key.slot, c.group.slot, c.node->params.factor, c.out_key.slot,
                  node.arena);
}

const CandidateSet* RunInsertNode(const NodeContext& node, rt::CancelToken) {
  const NodeParams& p = node.node.node->params;
  return RunInsert(node.input(0), node.input(1), node.registry().id_slot(),
                   static_cast<std::size_t>(p.every), static_cast<std::size_t>(p.max_inserted),
                   node.arena);
}

const CandidateSet* RunBusyCpuNode(const NodeContext& node, rt::CancelToken token) {
  RunBusyCpu(std::chrono::milliseconds(node.node.node->params.ms), token);
  return &node.input(0);
}

rt::Task<const CandidateSet*> RunSleepNode(NodeContext& node) {
  co_await rt::SleepFor(std::chrono::milliseconds(node.node.node->params.ms));
  co_return &node.input(0);
}

}  // namespace rankd::engine
