#include "rankd/engine/api/request_ids.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace rankd::engine {
namespace {

// 48 random bits, drawn once per process.
const std::string& ProcessPrefix() {
  static const std::string prefix = [] {
    std::random_device device;
    const std::uint64_t bits =
        ((static_cast<std::uint64_t>(device()) << 32) | device()) & 0xffff'ffff'ffffULL;
    char text[24];
    std::snprintf(text, sizeof text, "rankd-%012llx-", static_cast<unsigned long long>(bits));
    return std::string(text);
  }();
  return prefix;
}

bool IsLowerHex(std::string_view s) {
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string NextRequestId() {
  static std::atomic<std::uint64_t> counter{0};
  // Relaxed: the counter only has to hand out each value once.
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  return ProcessPrefix() + std::to_string(n);
}

std::optional<std::string_view> TraceIdOf(std::string_view traceparent) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters in version 00.
  if (traceparent.size() != 55 || traceparent[2] != '-' || traceparent[35] != '-' ||
      traceparent[52] != '-') {
    return std::nullopt;
  }
  const std::string_view version = traceparent.substr(0, 2);
  const std::string_view trace = traceparent.substr(3, 32);
  const std::string_view parent = traceparent.substr(36, 16);
  const std::string_view flags = traceparent.substr(53, 2);
  if (version != "00" || !IsLowerHex(trace) || !IsLowerHex(parent) || !IsLowerHex(flags)) {
    return std::nullopt;
  }
  if (trace == std::string_view("00000000000000000000000000000000") ||
      parent == std::string_view("0000000000000000")) {
    return std::nullopt;
  }
  return trace;
}

}  // namespace rankd::engine
