#include "rankd/net/buffered_writer.h"

#include <stdexcept>

namespace rankd::net {

BufferedWriter::BufferedWriter(TcpStream& stream, std::size_t low_watermark,
                               std::size_t high_watermark)
    : stream_(&stream), low_(low_watermark), high_(high_watermark) {
  if (low_ > high_) {
    throw std::invalid_argument("BufferedWriter: low watermark " + std::to_string(low_) +
                                " is above the high watermark " + std::to_string(high_));
  }
}

rt::Task<void> BufferedWriter::Write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffered() > high_) co_await DrainTo(low_);
}

rt::Task<void> BufferedWriter::Flush() { co_await DrainTo(0); }

rt::Task<void> BufferedWriter::Close() {
  co_await DrainTo(0);
  stream_->ShutdownWrite();
}

rt::Task<void> BufferedWriter::DrainTo(std::size_t target) {
  while (buffered() > target) {
    const std::size_t n = co_await stream_->WriteSome(buffer_.data() + sent_, buffered());
    if (n == 0) throw std::system_error(EPIPE, std::system_category(), "write: the peer is gone");
    sent_ += n;
  }
  // Compact once everything queued so far is out, or when the sent prefix dominates.
  if (sent_ == buffer_.size()) {
    buffer_.clear();
    sent_ = 0;
  } else if (sent_ > buffer_.size() / 2) {
    buffer_.erase(0, sent_);
    sent_ = 0;
  }
}

}  // namespace rankd::net
