#include "exec/capturing_batch.h"

#include <string>
#include <utility>

#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

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

}  // namespace rankd::engine
