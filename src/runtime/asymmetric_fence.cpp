#include "rankd/runtime/asymmetric_fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace rankd::rt {
namespace {

bool RegisterMembarrier() noexcept {
#if defined(__SANITIZE_THREAD__)
  return false;  // ThreadSanitizer cannot see the barrier: use seq_cst accesses instead
#else
  const long supported = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

}  // namespace

namespace detail {
bool membarrier_ready = false;
}  // namespace detail

bool InitAsymmetricFences() noexcept {
  static const bool ready = [] {
    detail::membarrier_ready = RegisterMembarrier();
    return detail::membarrier_ready;
  }();
  return ready;
}

void HeavyFence() noexcept {
  if (detail::membarrier_ready) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

}  // namespace rankd::rt
