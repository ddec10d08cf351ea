#include "rankd/engine/exec/request_capture.h"

namespace rankd::engine {

std::string_view CapturedOutcomeName(CapturedOutcome outcome) noexcept {
  switch (outcome) {
    case CapturedOutcome::kReply:
      return "reply";
    case CapturedOutcome::kErrorReply:
      return "error";
    case CapturedOutcome::kCommandTimeout:
      return "timeout";
    case CapturedOutcome::kConnectionLost:
      return "connection";
    case CapturedOutcome::kUnanswered:
      return "unanswered";
  }
  return "reply";
}

}  // namespace rankd::engine
