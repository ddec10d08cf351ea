// RANKD_D_ASSERT(condition): an invariant checked where it lives, in debug and sanitizer builds
// (RANKD_DEBUG_CHECKS=1: the Debug, asan and tsan build types and the fuzz targets), where a
// broken one prints the condition, file and line and aborts; in release builds it compiles to
// nothing and the condition is not evaluated. DuckDB's D_ASSERT is the model. kDebugChecks lets
// code run a costlier Verify() only in those builds.
//
// Any thread.
#pragma once

#ifndef RANKD_DEBUG_CHECKS
#define RANKD_DEBUG_CHECKS 0
#endif

namespace rankd::rt {

inline constexpr bool kDebugChecks = RANKD_DEBUG_CHECKS != 0;

// Prints "invariant broken: <condition> (<file>:<line>)" to stderr and aborts.
[[noreturn]] void DebugCheckFailed(const char* condition, const char* file, int line) noexcept;

}  // namespace rankd::rt

#if RANKD_DEBUG_CHECKS
#define RANKD_D_ASSERT(condition) \
  ((condition) ? void(0) : ::rankd::rt::DebugCheckFailed(#condition, __FILE__, __LINE__))
#else
#define RANKD_D_ASSERT(condition) ((void)0)
#endif
