// BufferedWriter: coalesces small writes to a TcpStream, with backpressure.
//
// Write() appends to a buffer and returns without I/O while the buffer is below the high
// watermark; past it, it writes until the buffer is at or below the low watermark before
// returning, so a slow reader slows the writer instead of growing memory without bound.
// Flush() writes everything; Close() flushes, then sends FIN (graceful shutdown).
// Thread affinity: the stream's loop thread. Ownership: owns its buffer; borrows the stream,
// which must outlive it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "rankd/net/tcp.h"
#include "rankd/runtime/task.h"

namespace rankd::net {

class BufferedWriter {
 public:
  // Defaults: hold up to 256 KiB before pushing back; resume once drained to 64 KiB.
  static constexpr std::size_t kDefaultLowWatermark = 64 * 1024;
  static constexpr std::size_t kDefaultHighWatermark = 256 * 1024;

  explicit BufferedWriter(TcpStream& stream, std::size_t low_watermark = kDefaultLowWatermark,
                          std::size_t high_watermark = kDefaultHighWatermark);

  rt::Task<void> Write(std::string_view bytes);
  rt::Task<void> Flush();
  rt::Task<void> Close();

  std::size_t buffered() const noexcept { return buffer_.size() - sent_; }
  std::size_t low_watermark() const noexcept { return low_; }
  std::size_t high_watermark() const noexcept { return high_; }

 private:
  rt::Task<void> DrainTo(std::size_t target);

  TcpStream* stream_;
  std::size_t low_;
  std::size_t high_;
  std::string buffer_;
  std::size_t sent_ = 0;  // bytes at the front of buffer_ already written
};

}  // namespace rankd::net
