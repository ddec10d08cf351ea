// CapturingBatch: a node's batch sent so that every reply's bytes are kept for its request's
// capture (ExecuteOptions::capture; docs/experiments.md, "Capture and replay").
//
// It copies the batch's commands into a batch of its own whose reply targets record the bytes
// each reply's sink decodes (the last complete reply of a command is its answer, as the sinks
// take it: a Cluster's resent pipeline hands a command its reply twice) and pass them on to the
// original sink. The caller sends wire() instead of the batch, then Finish() hands the original
// batch the call's error replies, round trips and cache counts, and records every command into
// the capture.
//
// Thread affinity: the request's loop thread. Ownership: borrows the batch (which must outlive
// it) and owns the copy.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "rankd/engine/exec/request_capture.h"
#include "rankd/redis/batch.h"

namespace rankd::engine {

class CapturingBatch {
 public:
  explicit CapturingBatch(redis::Batch& batch);
  CapturingBatch(const CapturingBatch&) = delete;
  CapturingBatch& operator=(const CapturingBatch&) = delete;

  // What to send instead of the batch.
  redis::Batch& wire() noexcept { return wire_; }
  // After the call, however it ended: `failure` is how the call failed as a whole
  // (kCommandTimeout, kConnectionLost, kUnanswered), nullopt when it returned. A command without
  // a reply or error reply then counts as failed that way.
  void Finish(RequestCapture& capture, std::string_view endpoint,
              std::optional<CapturedOutcome> failure);

 private:
  struct Recorder {
    redis::detail::ReplyTarget inner;
    std::string reply;  // the last complete reply's bytes
    bool replied = false;
  };
  static redis::ParseStatus RecordInto(redis::ReplyParser& parser, std::string_view buffer,
                                       void* recorder, std::size_t* consumed);

  redis::Batch& batch_;
  redis::Batch wire_;
  std::vector<Recorder> recorders_;  // one per command; never reallocated (targets point in)
};

}  // namespace rankd::engine
