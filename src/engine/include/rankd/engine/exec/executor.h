// ExecutePlan: runs one request of a compiled plan on the current shard's loop, against its
// endpoints, within the request's deadline (docs/engine.md, "Execution").
//
// The async scheduler (the default) runs each node as a task as soon as its inputs are done, so
// independent branches run at once; a node sends all its Redis commands at once (follow and
// recommendation in two waves: the lists, then every followee's hash), through its key schema's
// feature cache where it has one. CPU nodes over more than
// `offload_rows` rows run on the CPU pool (over the node's own arena, resuming on the loop);
// smaller ones inline. The request is a TaskScope: its deadline, a node's `timeout_ms` (from
// when its inputs finished; for a node without one, ExecuteOptions::default_node_timeout if set)
// and a failed `fail` node cancel the work under it — Redis calls are abandoned, CPU work stops at
// its next check — they do not merely stop waiting for it.
//
// A `skip` node that fails or times out degrades by its op's degrade rule (the op table;
// docs/plan-format.md, "Failure policy"): a follow, recommendation, media or fetch_list yields no
// rows; a source yields no rows; another one-input node passes its input through unchanged, the
// keys it would have added reading as null; a concat keeps the inputs that finished before it
// was cut. Whatever happened, a node's rows have a column of every key its compiled node lists. A
// `fail` node that fails fails the request: upstream_error for a Redis failure, deadline_exceeded
// for a timeout, internal for anything else. At the request deadline every unfinished node, started
// or not, counts as timed out.
//
// The sync scheduler is the baseline the benchmarks compare against: the same nodes one at a
// time in topological order, sending through the endpoints' one-by-one decorators (each Redis
// command awaited before the next is sent; no feature cache). Same results. Each scheduler is a
// type of its own, chosen once from ExecuteOptions::scheduler when the request is made
// (exec/request.h, exec/schedulers.cpp).
//
// Thread affinity: a shard's loop thread (the endpoints' loop). Ownership: the result owns the
// request's memory (the arenas its rows live in).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/exec/request_capture.h"
#include "rankd/engine/problems/error_code.h"
#include "rankd/engine/vm/program.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

class EndpointSet;
struct SharedWork;

enum class Scheduler : std::uint8_t { kAsync, kSync };

// CPU nodes whose input has more rows than this run on the CPU pool (docs/engine.md, "Where CPU
// work runs": about where a sort or dedupe would hold the loop for a millisecond).
inline constexpr std::size_t kDefaultOffloadRows = 10'000;

struct ExecuteOptions {
  rt::Duration deadline = std::chrono::milliseconds(100);
  Scheduler scheduler = Scheduler::kAsync;
  std::size_t offload_rows = kDefaultOffloadRows;
  // The timeout of a node that declares no `timeout_ms` (counted, as a node's own, from when its
  // inputs finished); nullopt: such a node runs until the request's deadline. A node's own
  // `timeout_ms` wins.
  std::optional<rt::Duration> default_node_timeout;
  // Where to record every Redis command the request sends and its reply (capture and replay:
  // docs/experiments.md); null records nothing. Borrowed: must outlive the request.
  RequestCapture* capture = nullptr;
  // Another plan's finished execution of the same request whose nodes this one may reuse
  // (docs/engine.md, "Shared nodes"); null: none. Borrowed: must outlive the request (the result
  // keeps its memory alive).
  const SharedWork* shared = nullptr;
  // The pool CPU nodes over more than offload_rows rows run on; null: rt::CpuPool::Default().
  rt::CpuPool* cpu_pool = nullptr;
};

enum class NodeStatus : std::uint8_t { kNotRun, kOk, kDegraded, kFailed };
enum class DegradeReason : std::uint8_t { kNone, kTimeout, kError };

// What one node did (explain).
struct NodeReport {
  NodeStatus status = NodeStatus::kNotRun;
  DegradeReason reason = DegradeReason::kNone;
  std::string message;
  std::int64_t start_us = -1;  // from the request's start; -1: never started
  std::int64_t end_us = -1;
  std::size_t rows_in = 0;
  std::size_t rows_out = 0;
  std::uint64_t redis_commands = 0;
  std::uint64_t redis_batches = 0;  // round trips (one per wave)
  // Its key schema's feature cache (registry `cache`): commands answered without being sent
  // (a stored reply, or another request's fetch of the same command) and commands sent.
  bool cached = false;
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;
  std::uint64_t reply_bytes = 0;
  std::uint64_t unparsable_values = 0;
  bool on_pool = false;  // CPU work ran on the CPU pool (else on the loop)
  std::int64_t cpu_us = 0;
  // It did not run: its rows are those of an identical node of ExecuteOptions::shared, whose
  // Redis commands (saved_redis_commands) it did not send again.
  bool shared = false;
  std::uint64_t saved_redis_commands = 0;
};

// A request that failed as a whole.
struct ExecutionError {
  ErrorCode code = ErrorCode::kInternal;  // deadline_exceeded, upstream_error, internal
  std::string message;
};

struct ExecutionResult {
  std::optional<ExecutionError> error;
  // Per plan output (in Plan::outputs order): the compiled node and its rows.
  struct Output {
    const CompiledNode* node;
    const CandidateSet* rows;
  };
  std::vector<Output> outputs;
  // Per compiled node, in CompiledPlan::nodes order.
  std::vector<NodeReport> nodes;
  // Per compiled node: its rows when it finished (normally or degraded), else null.
  std::vector<const CandidateSet*> node_rows;
  std::int64_t elapsed_us = 0;
  // The memory the rows live in and may point into: the request's arenas and its inputs (a
  // string param a vm wrote).
  std::shared_ptr<void> memory;
};

// The request's inputs besides the plan.
struct RequestInputs {
  ParamBinding params;
  std::optional<std::int64_t> viewer_id;
};

// One plan's finished execution of a request, offered to another plan's execution of the same
// request (a surface's shadow plan reusing its primary's work: docs/engine.md, "Shared nodes").
struct SharedWork {
  std::shared_ptr<const CompiledPlan> plan;
  ParamBinding params;     // as the request's params were bound for `plan`
  ExecutionResult result;  // its node_rows, held by its memory
};

// Per node of `plan` run with `params`: the node of `work` whose rows it takes instead of running,
// or -1. A node takes the rows of a node with the same (non-empty) work key when the two plans
// share one registry, that node and every node under it finished normally, and each param the two
// read has the same value in both bindings.
std::vector<std::ptrdiff_t> MatchSharedNodes(const CompiledPlan& plan, const ParamBinding& params,
                                             const SharedWork& work);

rt::Task<ExecutionResult> ExecutePlan(std::shared_ptr<const CompiledPlan> plan,
                                      RequestInputs inputs, const EndpointSet& endpoints,
                                      ExecuteOptions options);

std::string_view NodeStatusName(NodeStatus status) noexcept;
std::string_view DegradeReasonName(DegradeReason reason) noexcept;

}  // namespace rankd::engine
