#include "rankd/http/date_cache.h"

#include <time.h>

namespace rankd::http {
namespace {

void TwoDigits(char* out, int v) noexcept {
  out[0] = static_cast<char>('0' + v / 10);
  out[1] = static_cast<char>('0' + v % 10);
}

}  // namespace

// Formatted by hand: strftime's %a and %b follow the locale, HTTP dates are always English.
void DateCache::FormatInto(std::time_t now, char out[kLength + 1]) noexcept {
  static constexpr char kDays[] = "SunMonTueWedThuFriSat";
  static constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char* p = out;
  for (int i = 0; i < 3; ++i) *p++ = kDays[tm.tm_wday * 3 + i];
  *p++ = ',';
  *p++ = ' ';
  TwoDigits(p, tm.tm_mday);
  p += 2;
  *p++ = ' ';
  for (int i = 0; i < 3; ++i) *p++ = kMonths[tm.tm_mon * 3 + i];
  *p++ = ' ';
  const int year = tm.tm_year + 1900;
  TwoDigits(p, year / 100 % 100);
  TwoDigits(p + 2, year % 100);
  p += 4;
  *p++ = ' ';
  TwoDigits(p, tm.tm_hour);
  p[2] = ':';
  TwoDigits(p + 3, tm.tm_min);
  p[5] = ':';
  TwoDigits(p + 6, tm.tm_sec);
  p += 8;
  for (char c : std::string_view(" GMT")) *p++ = c;
  *p = '\0';
}

void DateCache::Format(std::time_t now) noexcept {
  FormatInto(now, text_);
  second_ = now;
}

std::string_view DateCache::Now() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return Get(ts.tv_sec);
}

}  // namespace rankd::http
