// Minimal diagnostic logging for the runtime: one line per call, to stderr unless a sink is set.
#pragma once

#include <functional>
#include <string_view>

namespace rankd::rt {

using LogSink = std::function<void(std::string_view line)>;

// Replaces the process-wide sink; an empty sink restores stderr. Any thread; the sink itself
// must be callable from any thread.
void SetLogSink(LogSink sink);

// Writes one line (a newline is appended). Any thread.
void LogLine(std::string_view line);

}  // namespace rankd::rt
