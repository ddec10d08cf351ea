// JSON strings as rankd writes them everywhere (plan digests, responses, a server's endpoints
// and logs): UTF-8 as itself, control characters and quotes escaped as JSON.stringify does.
//
// Plain functions; no thread affinity.
#pragma once

#include <string>
#include <string_view>

namespace rankd::engine::json {

// Appends `text` (UTF-8, lone surrogates as WTF-8) as a JSON string in double quotes. Bytes that
// are not UTF-8 (a stray continuation byte, an overlong form, a sequence cut short) are written
// as \ufffd, so the result is valid JSON whatever the input.
void AppendJsonString(std::string& out, std::string_view text);
// `text` as a JSON string in double quotes, e.g. for messages.
std::string QuoteJson(std::string_view text);

}  // namespace rankd::engine::json
