// Ranker: answers ranking requests on one shard — parse the body, find the plan (the one named,
// or the viewer's variant's of the surface named: docs/experiments.md), bind the
// params, execute on the shard's endpoints within the deadline, write the response — the part of
// `/rank` and `rankd run` that knows nothing of HTTP or stdin (docs/engine.md).
//
// Thread affinity: the shard's loop thread (its endpoints'). Ownership: holds the plan store it
// answers from (swapped whole by set_store; a request keeps the store it started with) and
// borrows the endpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/admission.h"
#include "rankd/engine/problems/error_code.h"
#include "rankd/engine/api/shadow_run.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

struct RankerOptions {
  // The deadline of a request that does not set deadline_ms.
  rt::Duration default_deadline = std::chrono::milliseconds(100);
  Scheduler scheduler = Scheduler::kAsync;
  std::size_t offload_rows = kDefaultOffloadRows;
  // The timeout of a node that declares no `timeout_ms` (ExecuteOptions::default_node_timeout).
  std::optional<rt::Duration> default_node_timeout;
};

class Ranker {
 public:
  Ranker(std::shared_ptr<const CompiledPlanStore> store, const EndpointSet& endpoints,
         RankerOptions options);

  // How one node of an executed plan went, for a server's metrics.
  struct NodeOutcome {
    std::string_view node;          // its id (a view into `Answer::compiled`)
    std::int64_t duration_us = -1;  // -1: it never started
    DegradeReason degraded = DegradeReason::kNone;
    std::uint64_t unparsable_values = 0;  // as explain's (NodeReport::unparsable_values)
  };
  // One request's answer: the JSON body, and what a server logs and counts about it.
  struct Answer {
    std::string body;
    std::optional<ErrorCode> error;  // nullopt when it ranked
    std::string error_message;       // the error's message (for the log line), empty when it ranked
    std::string request_id;
    std::string trace_id;  // of a valid traceparent, else empty
    std::string plan;      // the plan named, or the one the surface's variant runs
    // A request naming a surface of the store: its name and the viewer's variant (from the
    // store, never from the request: they label metrics). Empty otherwise.
    std::string surface;
    std::string variant;
    std::size_t degraded = 0;
    std::size_t rows = 0;   // of a ranked answer: its rows, over every output
    bool captured = false;  // its plan ran with Context::capture recording
    // Of a ranked answer, when Context::served_record asked: its served-rankings record
    // (WriteServedRecord, with Context::served_record_time as its "time"); empty otherwise.
    std::string served_record;
    // The plan it named, once found in the store (null before), and its executed nodes.
    std::shared_ptr<const CompiledPlan> compiled;
    std::vector<NodeOutcome> nodes;
    // Of a ranked answer of a surface with a shadow plan, when Context::shadow_draw fell within
    // the shadow's sample: the shadow's run, for the caller to start once the answer is sent.
    std::unique_ptr<ShadowRun> shadow;
  };
  // What a request carries besides its body — HTTP headers: a request id (X-Request-Id, used
  // when the body has no request_id, with the same rules) and a W3C traceparent (its trace id
  // goes to the answer for the log line) — and what its caller asks of it.
  struct Context {
    std::optional<std::string_view> request_id{};
    std::string_view traceparent{};
    // Where a captured request records every Redis command its plan sends and its reply
    // (docs/experiments.md, "Capture and replay"). A request is captured when `capture_all` is
    // set or it asks (`"capture": true`); null: the caller keeps no captures, and a request
    // asking is a bad_request. Borrowed until Rank returns.
    RequestCapture* capture = nullptr;
    bool capture_all = false;
    // Answers with this plan instead of the one the request names or its surface assigns (a
    // replay against another plan); the answer then names no surface, unless this is the plan
    // its surface assigned. Empty: none.
    std::string_view plan_override{};
    // Write Answer::served_record when the request ranks (docs/experiments.md, "Served-rankings
    // log").
    bool served_record = false;
    // The served-rankings record's "time": the server's clock when it asks (RFC 3339; empty:
    // none). Borrowed until Rank returns.
    std::string_view served_record_time{};
    // A uniform draw in [0, 1) deciding whether a request of a surface with a shadow plan is
    // shadowed (it is when the draw is under the shadow's sample); nullopt: never.
    std::optional<double> shadow_draw{};
  };
  rt::Task<Answer> Rank(std::string_view body, Context context);
  rt::Task<Answer> Rank(std::string_view body) { return Rank(body, Context{}); }

  void set_store(std::shared_ptr<const CompiledPlanStore> store) { store_ = std::move(store); }
  // Asked before each request runs (null: every request runs); borrowed, must outlive the
  // requests it admitted.
  void set_admission(Admission* admission) noexcept { admission_ = admission; }
  const std::shared_ptr<const CompiledPlanStore>& store() const noexcept { return store_; }
  const EndpointSet& endpoints() const noexcept { return endpoints_; }
  const RankerOptions& options() const noexcept { return options_; }
  Admission* admission() const noexcept { return admission_; }

 private:
  std::shared_ptr<const CompiledPlanStore> store_;
  const EndpointSet& endpoints_;
  RankerOptions options_;
  Admission* admission_ = nullptr;
};

}  // namespace rankd::engine
