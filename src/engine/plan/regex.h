// Regex predicates under RE2, compiled as docs/plan-format.md ("Predicates") says and as rankc
// checks them (dsl/src/compiler/re2.ts): RE2's default options (UTF-8) with flag `i` as
// case_sensitive = false, `s` as dot_nl = true, and `m` as "(?m)" written in front of the pattern
// (RE2's options set multi-line matching only in POSIX mode).
//
// Plain functions; no thread affinity. A compiled RE2 may be used from any thread.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rankd::engine {

// RE2 compiled from a regex predicate's pattern and flags (a sorted subset of "ims"); check ok().
std::unique_ptr<RE2> CompileRegex(std::string_view pattern, std::string_view flags);

// Why `pattern` with `flags` cannot be used (RE2's error, with a hint for lookaround and
// backreferences, which RE2 lacks on purpose), or nullopt when RE2 accepts it.
std::optional<std::string> RegexProblem(std::string_view pattern, std::string_view flags);

}  // namespace rankd::engine
