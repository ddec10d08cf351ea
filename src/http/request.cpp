#include "rankd/http/request.h"

namespace rankd::http {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]);
    unsigned char y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x |= 0x20;
    if (y >= 'A' && y <= 'Z') y |= 0x20;
    if (x != y) return false;
  }
  return true;
}

std::string_view Request::Header(std::string_view name) const noexcept {
  for (const HeaderField& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return {};
}

bool Request::HasHeader(std::string_view name) const noexcept {
  for (const HeaderField& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return true;
  }
  return false;
}

std::string_view Request::Param(std::string_view name) const noexcept {
  for (const PathParam& p : params) {
    if (p.name == name) return p.value;
  }
  return {};
}

void Request::Clear() noexcept {
  method = target = path = query = body = {};
  version_minor = 1;
  headers.clear();
  params.clear();
  content_length = 0;
  keep_alive = true;
  expect_continue = false;
}

}  // namespace rankd::http
