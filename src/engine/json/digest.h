// SHA-256 digests as the plan format writes them: 64 lowercase hex digits (OpenSSL's SHA-256).
//
// Plain function; no thread affinity.
#pragma once

#include <string>
#include <string_view>

namespace rankd::engine::json {

// The SHA-256 of `bytes`, as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace rankd::engine::json
