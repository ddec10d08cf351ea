// The CPU nodes: fixed_source, vm, filter, sort, take, topk, dedupe, concat, busy_cpu. Small
// ones run inline on the loop; those over more than `offload_rows` input rows (and busy_cpu,
// which exists to be heavy) run on the CPU pool over the node's own arena, resuming on the loop.
// Either way the work sees the task's cancellation token.
#include <time.h>

#include "rankd/engine/cpu_ops.h"
#include "rankd/runtime/offload.h"
#include "request.h"

namespace rankd::engine {
namespace {

std::int64_t ThreadCpuNanos() {
  timespec ts{};
  // CLOCK_THREAD_CPUTIME_ID cannot fail on Linux for the calling thread; a zero would only make
  // one explain figure zero.
  (void)::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

const CandidateSet* Request::RunCpuOp(std::size_t i, rt::CancelToken token) {
  const CompiledNode& c = plan_->nodes()[i];
  const Node& node = *c.node;
  const Registry& reg = plan_->registry();
  Arena& arena = *nodes_[i].arena;
  token.ThrowIfStopRequested();
  switch (node.op) {
    case Op::kFixedSource:
      return RunFixedSource(node.params.ids, reg.keys().size(), reg.id_slot(), arena);
    case Op::kVm:
      return RunVm(Input(i, 0), c.key.slot, c.key.type, *c.program, inputs_.params, arena);
    case Op::kFilter:
      return RunFilter(Input(i, 0), *c.program, inputs_.params, arena);
    case Op::kSort:
      return RunSort(Input(i, 0), c.key.slot, node.params.order, arena);
    case Op::kTake:
      return RunTake(Input(i, 0), static_cast<std::size_t>(node.params.count), arena);
    case Op::kTopk:
      return RunTopk(Input(i, 0), c.key.slot, static_cast<std::size_t>(node.params.k), arena);
    case Op::kDedupe:
      return RunDedupe(Input(i, 0), c.key.slot, arena);
    case Op::kConcat:
      return RunConcat(Input(i, 0), Input(i, 1), arena);
    case Op::kBusyCpu:
      RunBusyCpu(std::chrono::milliseconds(node.params.ms), token);
      return &Input(i, 0);
    default:
      throw std::logic_error("not a CPU op: " + std::string(OpName(node.op)));
  }
}

rt::Task<const CandidateSet*> Request::Cpu(std::size_t i) {
  NodeReport& report = nodes_[i].report;
  const bool heavy =
      plan_->nodes()[i].node->op == Op::kBusyCpu || report.rows_in > options_.offload_rows;
  if (!heavy) {
    const std::int64_t cpu = ThreadCpuNanos();
    const CandidateSet* rows = RunCpuOp(i, co_await rt::CurrentCancelToken());
    report.cpu_us += (ThreadCpuNanos() - cpu) / 1000;
    co_return rows;
  }
  report.on_pool = true;
  std::int64_t cpu_ns = 0;
  const CandidateSet* rows = co_await rt::OffloadCpu([this, i, &cpu_ns](rt::CancelToken token) {
    const std::int64_t start = ThreadCpuNanos();
    struct Account {
      std::int64_t start;
      std::int64_t* total;
      ~Account() { *total = ThreadCpuNanos() - start; }
    } account{start, &cpu_ns};
    return RunCpuOp(i, token);
  });
  report.cpu_us += cpu_ns / 1000;
  co_return rows;
}

}  // namespace rankd::engine
