// CapturingEndpoint: the endpoint a captured request's batches go through, recording every
// command and what came of it into the request's capture (ExecuteOptions::capture; RequestCapture,
// rankd/engine/exec/request_capture.h; docs/experiments.md, "Capture and replay").
//
// It sends a copy of each batch through the endpoint it wraps: the copy's reply targets keep the
// bytes each reply's sink decodes (the last complete reply of a command is its answer, as the
// sinks take it: a Cluster's resent pipeline hands a command its reply twice; a feature cache's
// stored reply is decoded as one off the wire, so it is recorded too) and pass them on to the
// original sink. However the call ends, the batch then gets the copy's error replies, round trips
// and cache counts, and the capture gets one numbered batch of records: each command's reply, its
// error reply, or how the call failed before it came — kCommandTimeout (the endpoint's command
// timeout: rt::DeadlineExceeded), kConnectionLost (any redis::RedisError), kUnanswered (the
// request stopped waiting: cancelled). The call's exception passes through unchanged.
//
// Thread affinity: the request's loop thread. Ownership: borrows the endpoint it wraps and the
// capture (both must outlive its calls); a call owns its copy of the batch.
#pragma once

#include "rankd/engine/exec/request_capture.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::engine {

class CapturingEndpoint final : public Endpoint {
 public:
  CapturingEndpoint(Endpoint& inner, RequestCapture& capture);
  rt::Task<void> Start(rt::Duration timeout) override;
  rt::Task<void> Execute(redis::Batch& batch) override;
  bool reachable() const override { return inner_.reachable(); }
  bool ready() const override { return inner_.ready(); }
  std::size_t in_flight() const override { return inner_.in_flight(); }
  std::int64_t oldest_due_ns() const override { return inner_.oldest_due_ns(); }

 private:
  Endpoint& inner_;
  RequestCapture& capture_;
};

}  // namespace rankd::engine
