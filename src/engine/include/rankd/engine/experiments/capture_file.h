// Capture files: one captured request per line (JSON lines), as docs/experiments.md ("Capture
// and replay") specifies — the request's body, the plan that answered it, its response's bytes
// and every Redis command the plan sent with what came back (exec/request_capture.h).
//
// Contract: AppendCaptureLine writes one line (with its '\n') that ParseCaptureLine reads back
// to equal values. ParseCaptureLine takes any bytes: a line that is not a capture (not JSON, a
// missing or mistyped member, a command that is not a RESP array of bulk strings, bad base64)
// is an error naming the member.
//
// Plain functions; no thread affinity.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/exec/request_capture.h"

namespace rankd::engine::experiments {

// The format's version, the value of a line's "rankd_capture" member.
inline constexpr int kCaptureFormatVersion = 1;

struct CaptureRecord {
  std::string request;  // the request's body, as received
  // The id its response carries (the body's request_id, else X-Request-Id's, else one the
  // server made): a replay answers with it.
  std::string request_id;
  std::string plan;         // the plan that answered it (a surface's: its variant's)
  std::string plan_digest;  // empty when the request failed before a plan was found
  std::string response;     // the response's body, byte for byte
  std::vector<CapturedCommand> commands;
};

void AppendCaptureLine(std::string& out, const CaptureRecord& record);
std::expected<CaptureRecord, std::string> ParseCaptureLine(std::string_view line);

// The arguments of a command encoded as RESP (an array of one or more bulk strings), or nullopt
// when it is not one.
std::optional<std::vector<std::string_view>> CommandArguments(std::string_view encoded);

// Standard base64 (RFC 4648, with padding), for bytes a JSON string cannot carry exactly.
void AppendBase64(std::string& out, std::string_view bytes);
std::expected<std::string, std::string> DecodeBase64(std::string_view text);

}  // namespace rankd::engine::experiments
