// OutputBuffer: the bytes a connection will write next: the responses to one batch of
// pipelined requests, serialized back to back and sent with one write.
// Thread affinity: the connection's thread. Ownership: owns its storage, which it keeps (and
// reuses) across batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace rankd::http {

class OutputBuffer {
 public:
  explicit OutputBuffer(std::size_t initial_capacity = 4096)
      : data_(new char[initial_capacity]), capacity_(initial_capacity) {}

  void Append(std::string_view bytes) {
    Reserve(bytes.size());
    std::memcpy(data_.get() + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  void Append(char c) {
    Reserve(1);
    data_[size_++] = c;
  }
  void AppendDecimal(std::uint64_t value) {
    char digits[20];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    Reserve(static_cast<std::size_t>(n));
    while (n > 0) data_[size_++] = digits[--n];
  }

  const char* data() const noexcept { return data_.get() + sent_; }
  // Bytes appended and not yet marked sent.
  std::size_t size() const noexcept { return size_ - sent_; }
  bool empty() const noexcept { return size_ == sent_; }
  void MarkSent(std::size_t n) noexcept {
    sent_ += n;
    if (sent_ == size_) sent_ = size_ = 0;
  }
  void Clear() noexcept { sent_ = size_ = 0; }

  // Drops storage grown beyond `limit` bytes (after a large response), keeping a smaller one.
  void ShrinkTo(std::size_t limit) {
    if (capacity_ > limit && empty()) {
      data_.reset(new char[limit]);
      capacity_ = limit;
    }
  }

 private:
  void Reserve(std::size_t extra) {
    if (size_ + extra <= capacity_) return;
    std::size_t capacity = capacity_ * 2;
    while (capacity < size_ + extra) capacity *= 2;
    std::unique_ptr<char[]> grown(new char[capacity]);
    std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  std::size_t capacity_;
  std::size_t size_ = 0;
  std::size_t sent_ = 0;
};

}  // namespace rankd::http
