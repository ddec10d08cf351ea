// OutputBuffer: the bytes a connection will write next: the responses to one batch of
// pipelined requests, serialized back to back and sent with one write.
// Thread affinity: the connection's thread. Ownership: owns its storage (whole pages, see
// page_buffer.h), which it keeps (and reuses) across batches until told to shrink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "rankd/http/page_buffer.h"

namespace rankd::http {

class OutputBuffer {
 public:
  explicit OutputBuffer(std::size_t initial_capacity = 4096) : data_(initial_capacity) {}

  void Append(std::string_view bytes) {
    Reserve(bytes.size());
    std::memcpy(data_.data() + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  void Append(char c) {
    Reserve(1);
    data_.data()[size_++] = c;
  }
  void AppendDecimal(std::uint64_t value) {
    char digits[20];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    Reserve(static_cast<std::size_t>(n));
    while (n > 0) data_.data()[size_++] = digits[--n];
  }

  const char* data() const noexcept { return data_.data() + sent_; }
  // Bytes appended and not yet marked sent.
  std::size_t size() const noexcept { return size_ - sent_; }
  bool empty() const noexcept { return size_ == sent_; }
  void MarkSent(std::size_t n) noexcept {
    sent_ += n;
    if (sent_ == size_) sent_ = size_ = 0;
  }
  void Clear() noexcept { sent_ = size_ = 0; }

  // Drops storage grown beyond `limit` bytes (after a burst), keeping a smaller one. Returns the
  // bytes given back (0 when it was small enough, or not empty).
  std::size_t ShrinkTo(std::size_t limit) {
    if (data_.capacity() <= PageBuffer::RoundToPages(limit) || !empty()) return 0;
    const std::size_t freed = data_.capacity();
    data_ = PageBuffer(limit);
    return freed;
  }
  std::size_t capacity() const noexcept { return data_.capacity(); }

 private:
  void Reserve(std::size_t extra) {
    if (size_ + extra > data_.capacity()) [[unlikely]]
      Grow(extra);
  }
  // Out of line, so the appends that fit (nearly all) inline to a compare and a copy.
  [[gnu::noinline, gnu::cold]] void Grow(std::size_t extra) {
    std::size_t capacity = data_.capacity() * 2;
    while (capacity < size_ + extra) capacity *= 2;
    PageBuffer grown(capacity);
    std::memcpy(grown.data(), data_.data(), size_);
    data_ = std::move(grown);
  }

  PageBuffer data_;
  std::size_t size_ = 0;
  std::size_t sent_ = 0;
};

}  // namespace rankd::http
