// DateCache: the IMF-fixdate of the current second ("Sun, 06 Nov 1994 08:49:37 GMT") for the
// Date header, formatted at most once per second.
// Thread affinity: one thread (each shard has its own). Ownership: a value.
#pragma once

#include <ctime>
#include <string_view>

namespace rankd::http {

class DateCache {
 public:
  static constexpr std::size_t kLength = 29;

  // The date for the wall-clock second `now` (seconds since the epoch).
  std::string_view Get(std::time_t now) noexcept {
    if (now != second_) Format(now);
    return std::string_view(text_, kLength);
  }
  // The date for the current second (reads the coarse real-time clock, a vDSO call).
  std::string_view Now() noexcept;

  static void FormatInto(std::time_t now, char out[kLength + 1]) noexcept;

 private:
  void Format(std::time_t now) noexcept;

  std::time_t second_ = -1;
  char text_[kLength + 1] = {};
};

}  // namespace rankd::http
