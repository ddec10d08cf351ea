#include "rankd/service/line_file_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace rankd::service {

LineFileWriter::LineFileWriter(const std::string& path, std::size_t max_queued_bytes)
    : path_(path), max_queued_bytes_(max_queued_bytes) {
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    throw std::runtime_error(path + ": cannot open for appending (" + std::strerror(errno) + ")");
  }
  thread_ = std::thread([this] { Run(); });
}

LineFileWriter::~LineFileWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  std::fclose(file_);
}

bool LineFileWriter::Offer(std::string line) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queued_bytes_ + line.size() > max_queued_bytes_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queued_bytes_ += line.size();
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
  return true;
}

void LineFileWriter::Run() {
  std::vector<std::string> batch;
  std::string text;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.swap(queue_);
      queued_bytes_ = 0;
    }
    text.clear();
    for (const std::string& line : batch) text += line;
    const bool ok =
        std::fwrite(text.data(), 1, text.size(), file_) == text.size() && std::fflush(file_) == 0;
    (ok ? written_ : dropped_).fetch_add(batch.size(), std::memory_order_relaxed);
    if (!ok) std::clearerr(file_);
    batch.clear();
  }
}

}  // namespace rankd::service
