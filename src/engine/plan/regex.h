// Regex predicates under RE2, compiled as docs/plan-format.md ("Predicates") says and as rankc
// checks them (dsl/src/compiler/re2.ts): RE2's default options (UTF-8) with flag `i` as
// case_sensitive = false, `s` as dot_nl = true, and `m` as "(?m)" written in front of the pattern
// (RE2's options set multi-line matching only in POSIX mode).
//
// Plain functions; no thread affinity. A compiled RE2 may be used from any thread.
#pragma once

#include <re2/re2.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rankd::engine {

// RE2's memory bound (RE2::Options::max_mem: its compiled programs and lazily built DFAs
// together) for a plan's own patterns, and for a string param's patterns, which come in requests
// (its default too, so that the default behaves as a request's value): a pattern that needs more
// does not compile.
inline constexpr std::int64_t kPlanRegexMaxMem = std::int64_t{8} << 20;  // RE2's default
inline constexpr std::int64_t kParamRegexMaxMem = std::int64_t{1} << 20;

// RE2 compiled from a regex predicate's pattern and flags (a sorted subset of "ims"); check ok().
std::unique_ptr<RE2> CompileRegex(std::string_view pattern, std::string_view flags,
                                  std::int64_t max_mem = kPlanRegexMaxMem);

// Why `pattern` with `flags` cannot be used (RE2's error, with a hint for lookaround and
// backreferences, which RE2 lacks on purpose), or nullopt when RE2 accepts it within `max_mem`.
std::optional<std::string> RegexProblem(std::string_view pattern, std::string_view flags,
                                        std::int64_t max_mem = kPlanRegexMaxMem);

}  // namespace rankd::engine
