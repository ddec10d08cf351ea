#include "rankd/runtime/log.h"

#include <unistd.h>

#include <mutex>
#include <string>

namespace rankd::rt {
namespace {

std::mutex& SinkMutex() {
  static std::mutex mu;
  return mu;
}

LogSink& Sink() {
  static LogSink sink;
  return sink;
}

}  // namespace

void SetLogSink(LogSink sink) {
  std::lock_guard lock(SinkMutex());
  Sink() = std::move(sink);
}

void LogLine(std::string_view line) {
  std::lock_guard lock(SinkMutex());
  if (Sink()) {
    Sink()(line);
    return;
  }
  std::string out(line);
  out.push_back('\n');
  // One write so that concurrent lines from several processes do not interleave.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, out.data(), out.size());
}

}  // namespace rankd::rt
