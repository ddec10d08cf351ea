// EventLog: the service's log, one JSON object per line on a stream (stderr by default): a line
// per request (time, request_id, plan, plan_digest, shard, status, code, message, ms, degraded,
// trace_id), sampled, and lines for what the service does (docs/operations.md, "Logs").
//
// Thread affinity: any thread (each line is written with one fwrite, which the C library
// serializes; lines never interleave). Ownership: borrows the stream.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "rankd/engine/json/json_writer.h"

namespace rankd::service {

struct RequestLine {
  std::string_view request_id;
  std::string_view plan;
  std::string_view plan_digest;  // of the plan that answered, empty when none was found
  std::size_t shard = 0;
  int status = 200;
  std::string_view code;     // the error code, empty when it ranked
  std::string_view message;  // the error's message, empty when it ranked
  double ms = 0;
  std::size_t degraded = 0;
  std::string_view trace_id;  // a W3C traceparent's trace id, empty when none came
};

class EventLog {
 public:
  // Logs every request that failed and a `sample` share (0 to 1) of those that ranked.
  explicit EventLog(double sample = 1.0, std::FILE* stream = stderr)
      : sample_(sample), stream_(stream) {}

  // Whether to log a request that ranked; `random` is uniform in [0, 1) (the caller's
  // per-shard generator, so logging shares no state between shards).
  bool Sampled(double random) const noexcept { return random < sample_; }
  void Request(const RequestLine& line);
  // An event line: {"time", "event"}.
  void Event(std::string_view event);
  // An event line: {"time", "event", then the members `write_fields` writes into the open
  // object}.
  template <class WriteFields>
    requires std::invocable<WriteFields&, engine::json::JsonWriter&>
  void Event(std::string_view event, WriteFields&& write_fields) {
    std::string line;
    engine::json::JsonWriter w(line);
    BeginLine(w, event);
    write_fields(w);
    w.EndObject();
    Write(line);
  }

 private:
  // Opens the line's object with its time and event.
  static void BeginLine(engine::json::JsonWriter& w, std::string_view event);
  void Write(std::string& line);

  double sample_;
  std::FILE* stream_;
};

// `t` as RFC 3339 UTC, to the second (2026-11-23T17:02:03Z) or the millisecond
// (2026-11-23T17:02:03.456Z).
std::string Rfc3339(std::chrono::system_clock::time_point t, bool milliseconds);
// The current time, to the millisecond.
std::string NowRfc3339();

}  // namespace rankd::service
