#include "rankd/service/event_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "rankd/engine/json/json_text.h"

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

void EventLog::Request(const RequestLine& r) {
  std::string line = "{\"time\":\"" + NowRfc3339() + "\",\"event\":\"request\",\"request_id\":";
  engine::json::AppendJsonString(line, r.request_id);
  line += ",\"plan\":";
  engine::json::AppendJsonString(line, r.plan);
  if (!r.plan_digest.empty()) {
    line += ",\"plan_digest\":";
    engine::json::AppendJsonString(line, r.plan_digest);
  }
  char numbers[128];
  std::snprintf(numbers, sizeof numbers,
                ",\"shard\":%zu,\"status\":%d,\"ms\":%.3f,\"degraded\":%zu", r.shard, r.status,
                r.ms, r.degraded);
  line += numbers;
  if (!r.code.empty()) {
    line += ",\"code\":";
    engine::json::AppendJsonString(line, r.code);
  }
  if (!r.message.empty()) {
    line += ",\"message\":";
    engine::json::AppendJsonString(line, r.message);
  }
  if (!r.trace_id.empty()) {
    line += ",\"trace_id\":";
    engine::json::AppendJsonString(line, r.trace_id);
  }
  line += '}';
  Write(line);
}

void EventLog::Event(std::string_view event, std::string_view fields) {
  std::string line = "{\"time\":\"" + NowRfc3339() + "\",\"event\":";
  engine::json::AppendJsonString(line, event);
  if (!fields.empty()) {
    line += ',';
    line += fields;
  }
  line += '}';
  Write(line);
}

void EventLog::Write(std::string& line) {
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stream_);
}

}  // namespace rankd::service
