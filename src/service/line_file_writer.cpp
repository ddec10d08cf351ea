#include "rankd/service/line_file_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace rankd::service {

LineFileWriter::LineFileWriter(const std::string& path, Options options)
    : path_(path), options_(options) {
  if (options_.keep < 1) options_.keep = 1;
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    throw std::runtime_error(path + ": cannot open for appending (" + std::strerror(errno) + ")");
  }
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  file_bytes_ = error ? 0 : size;
  thread_ = std::thread([this] { Run(); });
}

LineFileWriter::~LineFileWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (file_ != nullptr) std::fclose(file_);
}

bool LineFileWriter::Offer(std::string line) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queued_bytes_ + line.size() > options_.max_queued_bytes) {
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
    const bool ok = file_ != nullptr &&
                    std::fwrite(text.data(), 1, text.size(), file_) == text.size() &&
                    std::fflush(file_) == 0;
    (ok ? written_ : dropped_).fetch_add(batch.size(), std::memory_order_relaxed);
    if (ok) {
      file_bytes_ += text.size();
    } else if (file_ != nullptr) {
      std::clearerr(file_);
    }
    batch.clear();
    if (options_.rotate_bytes > 0 && file_bytes_ >= options_.rotate_bytes) Rotate();
  }
}

void LineFileWriter::Rotate() {
  std::error_code error;  // a rename that fails leaves that file where it was
  std::filesystem::remove(path_ + "." + std::to_string(options_.keep), error);
  for (int k = options_.keep - 1; k >= 1; --k) {
    std::filesystem::rename(path_ + "." + std::to_string(k), path_ + "." + std::to_string(k + 1),
                            error);
  }
  if (file_ != nullptr) std::fclose(file_);
  std::filesystem::rename(path_, path_ + ".1", error);
  file_ = std::fopen(path_.c_str(), "ae");
  if (file_ == nullptr) {
    // Nowhere to write: reopen the rotated file rather than lose every later line (if that
    // fails too, later lines count as dropped).
    file_ = std::fopen((path_ + ".1").c_str(), "ae");
  }
  file_bytes_ = 0;
  rotations_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace rankd::service
