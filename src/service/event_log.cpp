#include "rankd/service/event_log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>


namespace rankd::service {

std::string Rfc3339(std::chrono::system_clock::time_point t, bool milliseconds) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  if (milliseconds) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()) % 1000;
    std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms.count()));
  } else {
    std::snprintf(text + n, sizeof text - n, "Z");
  }
  return text;
}

std::string NowRfc3339() { return Rfc3339(std::chrono::system_clock::now(), true); }

void EventLog::BeginLine(engine::json::JsonWriter& w, std::string_view event) {
  w.BeginObject().Member("time", NowRfc3339()).Member("event", event);
}

void EventLog::Request(const RequestLine& r) {
  std::string line;
  engine::json::JsonWriter w(line);
  BeginLine(w, "request");
  w.Member("request_id", r.request_id).Member("plan", r.plan);
  if (!r.plan_digest.empty()) w.Member("plan_digest", r.plan_digest);
  // Milliseconds to the microsecond, in fixed notation.
  char ms[64];
  const int ms_length = std::snprintf(ms, sizeof ms, "%.3f", r.ms);
  w.Key("shard").Uint(r.shard).Key("status").Int(r.status);
  w.Key("ms").Raw(std::string_view(ms, std::min(sizeof ms - 1, static_cast<std::size_t>(ms_length))));
  w.Key("degraded").Uint(r.degraded);
  if (!r.code.empty()) w.Member("code", r.code);
  if (!r.message.empty()) w.Member("message", r.message);
  if (!r.trace_id.empty()) w.Member("trace_id", r.trace_id);
  w.EndObject();
  Write(line);
}

void EventLog::Event(std::string_view event) {
  std::string line;
  engine::json::JsonWriter w(line);
  BeginLine(w, event);
  w.EndObject();
  Write(line);
}

void EventLog::Write(std::string& line) {
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stream_);
}

}  // namespace rankd::service
