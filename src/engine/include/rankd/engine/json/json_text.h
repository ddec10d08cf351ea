// JSON strings as rankd writes them everywhere (plan digests, responses, a server's endpoints
// and logs): UTF-8 as itself, control characters and quotes escaped as JSON.stringify does; and
// the check that a text is one JSON document.
//
// Plain functions; no thread affinity.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rankd::engine::json {

// Appends `text` (UTF-8, lone surrogates as WTF-8) as a JSON string in double quotes. Bytes that
// are not UTF-8 (a stray continuation byte, an overlong form, a sequence cut short) are written
// as \ufffd, so the result is valid JSON whatever the input.
void AppendJsonString(std::string& out, std::string_view text);
// `text` as a JSON string in double quotes, e.g. for messages.
std::string QuoteJson(std::string_view text);

// Whether `text` is one JSON document as the engine reads JSON (JSON.parse's grammar, no repeated
// member names, bounded nesting): nullopt when it is, else what is wrong and where (byte, line,
// column). For a server that passes JSON it does not interpret on to a client.
std::optional<std::string> JsonSyntaxError(std::string_view text);

}  // namespace rankd::engine::json
