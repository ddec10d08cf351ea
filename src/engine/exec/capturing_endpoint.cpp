#include "exec/capturing_endpoint.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/redis/client_errors.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

// One call's copy of a batch, whose reply targets record each reply's bytes on their way into
// the original sinks. Thread affinity: the caller's. Ownership: borrows the batch (which must
// outlive it) and owns the copy.
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

CapturingBatch::CapturingBatch(redis::Batch& batch) : batch_(batch) {
  recorders_.reserve(batch.size());
  wire_.Reserve(batch.size(), batch.pipeline().bytes().size(), batch.size() * 16);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    recorders_.push_back(Recorder{batch.target(i), {}, false});
    wire_.AddEncodedTarget(batch.key(i),
                           redis::detail::ReplyTarget{&recorders_.back(), &RecordInto},
                           batch.command(i));
  }
  RANKD_D_ASSERT(recorders_.size() == batch.size());
}

redis::ParseStatus CapturingBatch::RecordInto(redis::ReplyParser& parser, std::string_view buffer,
                                              void* recorder, std::size_t* consumed) {
  auto* r = static_cast<Recorder*>(recorder);
  const redis::ParseStatus status = r->inner.parse(parser, buffer, r->inner.sink, consumed);
  if (status == redis::ParseStatus::kComplete) {
    r->reply.assign(buffer.substr(0, *consumed));
    r->replied = true;
  }
  return status;
}

void CapturingBatch::Finish(RequestCapture& capture, std::string_view endpoint,
                            std::optional<CapturedOutcome> failure) {
  batch_.add_round_trips(wire_.round_trips());
  batch_.cache_counts() = wire_.cache_counts();
  const std::uint32_t number = capture.NextBatch();
  for (std::size_t i = 0; i < wire_.size(); ++i) {
    CapturedCommand command{
        number, std::string(endpoint), std::string(wire_.command(i)), CapturedOutcome::kReply, {}};
    if (const std::optional<std::string>& error = wire_.error(i)) {
      batch_.set_error(i, *error);
      command.outcome = CapturedOutcome::kErrorReply;
      command.reply = *error;
    } else if (recorders_[i].replied) {
      command.reply = std::move(recorders_[i].reply);
    } else if (failure) {
      command.outcome = *failure;
    } else {
      continue;  // the call returned without this command's reply: never, by Execute's contract
    }
    capture.Add(std::move(command));
  }
}

}  // namespace

CapturingEndpoint::CapturingEndpoint(Endpoint& inner, RequestCapture& capture)
    : Endpoint(inner.name()), inner_(inner), capture_(capture) {}

rt::Task<void> CapturingEndpoint::Start(rt::Duration timeout) { return inner_.Start(timeout); }

rt::Task<void> CapturingEndpoint::Execute(redis::Batch& batch) {
  CapturingBatch capturing(batch);
  // Recorded once, however the call ends: a call whose frame is destroyed while it waits (the
  // request stopped waiting) is unanswered.
  struct Record {
    CapturingBatch& capturing;
    RequestCapture& capture;
    const std::string& endpoint;
    std::optional<CapturedOutcome> failure = CapturedOutcome::kUnanswered;
    ~Record() { capturing.Finish(capture, endpoint, failure); }
  } record{capturing, capture_, name()};
  try {
    co_await inner_.Execute(capturing.wire());
    record.failure = std::nullopt;
  } catch (const rt::DeadlineExceeded&) {
    record.failure = CapturedOutcome::kCommandTimeout;
    throw;
  } catch (const redis::RedisError&) {  // a lost connection, a malformed or error reply
    record.failure = CapturedOutcome::kConnectionLost;
    throw;
  }
}

}  // namespace rankd::engine
