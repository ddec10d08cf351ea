// PageBuffer: a byte buffer in whole pages mapped for it alone (mmap), unmapped when it is freed.
//
// A connection's buffers are the memory a client controls: a 1 MiB body or a burst of
// pipelined requests grows them, and a thousand such connections closing at once free
// gigabytes. From the allocator's heap, that memory would stay in its free lists (and in the
// process's RSS) long after; in pages of their own it goes back to the system the moment the
// buffer goes. The cost is one mmap and a page fault per page for a new buffer, which the server
// avoids for the common case by pooling read buffers per shard.
//
// Thread affinity: none of its own (the owner's). Ownership: owns its mapping; move-only.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <new>
#include <utility>

namespace rankd::http {

class PageBuffer {
 public:
  PageBuffer() noexcept = default;
  // At least `bytes` bytes (rounded up to whole pages). Throws std::bad_alloc.
  explicit PageBuffer(std::size_t bytes) : capacity_(RoundToPages(bytes)) {
    void* p =
        ::mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
  }
  PageBuffer(PageBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  ~PageBuffer() { Release(); }

  char* data() const noexcept { return data_; }
  std::size_t capacity() const noexcept { return capacity_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

  static std::size_t RoundToPages(std::size_t bytes) noexcept {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }

 private:
  void Release() noexcept {
    // munmap of a mapping we made fails only for a bad range, which we never pass.
    if (data_ != nullptr) (void)::munmap(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
  }

  char* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace rankd::http
