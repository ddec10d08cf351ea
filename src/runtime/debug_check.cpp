#include "rankd/runtime/debug_check.h"

#include <cstdio>
#include <cstdlib>

namespace rankd::rt {

void DebugCheckFailed(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "invariant broken: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace rankd::rt
