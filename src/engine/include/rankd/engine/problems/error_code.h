// ErrorCode: every error a ranking request (or the service around it, or the HTTP server under it)
// can answer with. Each code is defined once, in spec/errors.toml: its wire name (the `code` of an
// error body), its HTTP status and when it is answered (docs/engine.md, "Errors"); the enum and the
// table are generated from it (error_codes.gen.h). Code that fails a request names an ErrorCode,
// never a string, so a misspelt code cannot compile. The HTTP layer, which knows nothing of the
// engine, answers its own errors by status; the service turns each into its code here.
//
// Plain data; any thread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rankd/engine/problems/error_codes.gen.h"

namespace rankd::engine {

// An error a request (or an endpoint) answers with: its code and a message for people.
struct RankError {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Every code, in the order of the enum.
std::span<const ErrorCodeInfo> AllErrorCodes() noexcept;
std::string_view WireName(ErrorCode code) noexcept;
int HttpStatus(ErrorCode code) noexcept;
// The code of a wire name; nullopt for a name that is not one.
std::optional<ErrorCode> ErrorCodeNamed(std::string_view wire_name) noexcept;

}  // namespace rankd::engine
