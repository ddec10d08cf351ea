#include "rankd/engine/problems/error_code.h"

namespace rankd::engine {

std::span<const ErrorCodeInfo> AllErrorCodes() noexcept { return kErrorCodes; }

std::string_view WireName(ErrorCode code) noexcept {
  return kErrorCodes[static_cast<std::size_t>(code)].wire_name;
}

int HttpStatus(ErrorCode code) noexcept {
  return kErrorCodes[static_cast<std::size_t>(code)].http_status;
}

std::optional<ErrorCode> ErrorCodeNamed(std::string_view wire_name) noexcept {
  for (const ErrorCodeInfo& info : kErrorCodes) {
    if (info.wire_name == wire_name) return info.code;
  }
  return std::nullopt;
}

}  // namespace rankd::engine
