// Compiling regex patterns as plans mean them: RE2 with the plan's flags mapped the way rankc
// checks them (dsl/src/compiler/re2.ts): `i` case-insensitive, `s` dot matches newline, `m` a
// (?m) prefix (RE2's own multi-line option applies only in POSIX mode), partial matching. And a
// process-wide cache for patterns that arrive in requests, by (pattern, flags).
//
// Thread affinity: any thread (the cache takes a mutex). Ownership: compiled patterns are shared
// (std::shared_ptr), the cache holds at most kRegexCacheSize of them.
#pragma once

#include <re2/re2.h>

#include <cstddef>
#include <memory>
#include <string>

namespace rankd::engine {

// Patterns the cache keeps; past it, it starts over (requests rarely vary their patterns).
inline constexpr std::size_t kRegexCacheSize = 1024;

// Null, with RE2's message in `error`, when the pattern does not compile.
std::shared_ptr<const re2::RE2> CompileRegex(const std::string& pattern, const std::string& flags,
                                             std::string* error);

// The same, through the process-wide cache.
std::shared_ptr<const re2::RE2> CachedRegex(const std::string& pattern, const std::string& flags,
                                            std::string* error);

}  // namespace rankd::engine
