#include "rankd/engine/experiments/replay.h"

#include <utility>
#include <vector>

#include "rankd/engine/experiments/response_ranking.h"

namespace rankd::engine::experiments {
namespace {

std::vector<std::unique_ptr<Endpoint>> ReplayEndpoints(const CompiledPlanStore& store,
                                                       CapturedReplies& replies) {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  for (const EndpointDef& endpoint : store.store().registry().endpoints()) {
    endpoints.push_back(std::make_unique<ReplayEndpoint>(endpoint.name, replies));
  }
  return endpoints;
}

}  // namespace

Replayer::Replayer(std::shared_ptr<const CompiledPlanStore> store, RankerOptions ranker,
                   ReplayOptions options)
    : options_(std::move(options)),
      endpoints_(ReplayEndpoints(*store, replies_)),
      ranker_(std::move(store), endpoints_, ranker) {}

rt::Task<ReplayResult> Replayer::Replay(const CaptureRecord& record) {
  replies_.Load(record.commands);
  // The captured id, where the request has none of its own (as an X-Request-Id header would).
  std::optional<std::string_view> request_id;
  if (!record.request_id.empty()) request_id = record.request_id;
  // A request that asked to be captured is answered as one: into a capture no one keeps.
  RequestCapture recapture;
  Ranker::Answer answer =
      co_await ranker_.Rank(record.request, Ranker::Context{.request_id = request_id,
                                                            .capture = &recapture,
                                                            .plan_override = options_.plan});
  ReplayResult result;
  result.request_id = answer.request_id;
  result.plan_a = record.plan;
  result.plan_b = answer.plan;
  result.missing_commands = replies_.missing().size();
  result.identical = answer.body == record.response;
  result.response = std::move(answer.body);
  const auto a = RankedListOfResponse(record.response, options_.output, options_.score);
  const auto b = RankedListOfResponse(result.response, options_.output, options_.score);
  if (!a) {
    result.diff_error = "the captured response: " + a.error();
  } else if (!b) {
    result.diff_error = "the replay's response: " + b.error();
  } else if (auto diff = DiffRankings(*a, *b, options_.diff)) {
    result.diff = std::move(*diff);
  } else {
    result.diff_error = diff.error();
  }
  co_return result;
}

}  // namespace rankd::engine::experiments
