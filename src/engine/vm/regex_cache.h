// Compiling regex patterns as plans mean them: RE2 with the plan's flags mapped the way rankc
// checks them (dsl/src/compiler/re2.ts): `i` case-insensitive, `s` dot matches newline, `m` a
// (?m) prefix (RE2's own multi-line option applies only in POSIX mode), partial matching. And a
// process-wide cache for patterns that arrive in requests, by (pattern, flags).
//
// A request's pattern is untrusted: it compiles with RE2's memory bounded (kParamRegexMaxMem;
// one that needs more is refused), its outcome is cached whether it compiled or not (a refused
// pattern is not compiled again), and the cache is bounded in bytes (kRegexCacheBytes), each
// compiled pattern charged the most RE2 may use for it, least recently used first out. A server
// compiles a request's uncached patterns on the CPU pool (Ranker), never on its loop.
//
// Thread affinity: any thread (the cache takes a mutex). Ownership: compiled patterns are shared
// (std::shared_ptr); the cache holds entries within its byte budget.
#pragma once

#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "plan/regex.h"

namespace rankd::engine {

// The cache's budget: a compiled pattern is charged kParamRegexMaxMem (plan/regex.h), a refused
// one the size of its key and message.
inline constexpr std::size_t kRegexCacheBytes = std::size_t{64} << 20;

// Null, with RE2's message in `error`, when the pattern does not compile within `max_mem`.
std::shared_ptr<const re2::RE2> CompileRegex(const std::string& pattern, const std::string& flags,
                                             std::string* error, std::int64_t max_mem);

// A string param's pattern (kParamRegexMaxMem), through the process-wide cache: compiled on the
// calling thread when the cache has no outcome for it.
std::shared_ptr<const re2::RE2> CachedRegex(const std::string& pattern, const std::string& flags,
                                            std::string* error);

// Whether the cache has an outcome for (pattern, flags): CachedRegex will not compile it.
bool RegexCached(const std::string& pattern, const std::string& flags);

// The cache's entries and the bytes charged for them (tests, metrics).
struct RegexCacheUsage {
  std::size_t entries = 0;
  std::size_t bytes = 0;
};
RegexCacheUsage RegexCacheUsageNow();

}  // namespace rankd::engine
