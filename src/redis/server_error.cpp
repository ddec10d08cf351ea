// Classifying error replies by their first word and parsing cluster redirections.
#include "rankd/redis/server_error.h"

#include <array>
#include <charconv>
#include <utility>

namespace rankd::redis {

namespace {

constexpr std::array<std::pair<std::string_view, ErrorKind>, 18> kCodes{{
    {"ERR", ErrorKind::kErr},
    {"MOVED", ErrorKind::kMoved},
    {"ASK", ErrorKind::kAsk},
    {"WRONGTYPE", ErrorKind::kWrongType},
    {"CROSSSLOT", ErrorKind::kCrossSlot},
    {"TRYAGAIN", ErrorKind::kTryAgain},
    {"CLUSTERDOWN", ErrorKind::kClusterDown},
    {"NOAUTH", ErrorKind::kNoAuth},
    {"WRONGPASS", ErrorKind::kWrongPass},
    {"NOPERM", ErrorKind::kNoPerm},
    {"LOADING", ErrorKind::kLoading},
    {"BUSY", ErrorKind::kBusy},
    {"NOSCRIPT", ErrorKind::kNoScript},
    {"READONLY", ErrorKind::kReadOnly},
    {"MASTERDOWN", ErrorKind::kMasterDown},
    {"OOM", ErrorKind::kOom},
    {"EXECABORT", ErrorKind::kExecAbort},
    {"NOPROTO", ErrorKind::kNoProto},
}};

template <class T>
bool ParseUnsigned(std::string_view text, T max, T* out) {
  if (text.empty()) return false;
  T value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value > max) return false;
  *out = value;
  return true;
}

// "<slot> <host>:<port>", the host possibly an IPv6 address (split at the last ':').
std::optional<Redirect> ParseRedirect(std::string_view rest) {
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view endpoint = rest.substr(space + 1);
  const std::size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  Redirect r;
  constexpr std::uint16_t kMaxSlot = 16383;
  constexpr std::uint16_t kMaxPort = 65535;
  if (!ParseUnsigned<std::uint16_t>(rest.substr(0, space), kMaxSlot, &r.slot) ||
      !ParseUnsigned<std::uint16_t>(endpoint.substr(colon + 1), kMaxPort, &r.port) ||
      r.port == 0) {
    return std::nullopt;
  }
  r.host = endpoint.substr(0, colon);
  return r;
}

}  // namespace

std::string_view ErrorKindName(ErrorKind kind) {
  for (const auto& [code, k] : kCodes) {
    if (k == kind) return code;
  }
  return "OTHER";
}

ServerError ClassifyError(std::string_view message) {
  ServerError e;
  e.message = message;
  const std::size_t space = message.find(' ');
  e.code = message.substr(0, space);
  for (const auto& [code, kind] : kCodes) {
    if (code == e.code) {
      e.kind = kind;
      break;
    }
  }
  if ((e.kind == ErrorKind::kMoved || e.kind == ErrorKind::kAsk) &&
      space != std::string_view::npos) {
    e.redirect = ParseRedirect(message.substr(space + 1));
  }
  return e;
}

}  // namespace rankd::redis
