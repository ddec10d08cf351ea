// LineFileWriter: appends lines to a file from a thread of its own, so that the shards' loops
// never wait on the disk (the capture file and the served-rankings log: docs/experiments.md).
//
// Offer() queues a line and returns at once; the writer thread appends the queued lines in the
// order offered, a batch per write. The queue holds at most `max_queued_bytes`: a line that does
// not fit is dropped and counted (a full disk or a slow one sheds lines, never memory or
// requests). A failed write is counted and the lines lost with it too; the writer carries on with
// the next. The destructor writes what is queued, then joins the thread.
//
// Rotation (optional): once the file holds `rotate_bytes` or more after a write, it is renamed
// PATH.1 (PATH.1 to PATH.2, ..., up to PATH.<keep>; the oldest beyond is removed) and a new PATH
// is started, so a reader that has opened a file keeps reading it whole.
//
// Thread affinity: Offer and the counters from any thread. Ownership: owns the file and the
// thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rankd::service {

class LineFileWriter {
 public:
  static constexpr std::size_t kDefaultMaxQueuedBytes = 64 << 20;
  struct Options {
    std::size_t max_queued_bytes = kDefaultMaxQueuedBytes;
    std::uint64_t rotate_bytes = 0;  // 0: never rotated
    int keep = 1;                    // rotated files kept, PATH.1 to PATH.<keep> (>= 1)
  };

  // Opens `path` for appending (created if absent); std::runtime_error naming the path and why
  // when it cannot.
  LineFileWriter(const std::string& path, Options options);
  explicit LineFileWriter(const std::string& path) : LineFileWriter(path, Options{}) {}
  ~LineFileWriter();
  LineFileWriter(const LineFileWriter&) = delete;
  LineFileWriter& operator=(const LineFileWriter&) = delete;

  // Queues `line` (ending in '\n'); false when it was dropped: the queue is full.
  bool Offer(std::string line);

  std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  std::uint64_t rotations() const noexcept { return rotations_.load(std::memory_order_relaxed); }
  const std::string& path() const noexcept { return path_; }

 private:
  void Run();
  // Renames the file PATH.1 (shifting the older ones) and opens a new PATH. Writer thread only.
  void Rotate();

  std::string path_;
  Options options_;
  std::FILE* file_ = nullptr;
  std::uint64_t file_bytes_ = 0;  // writer thread only
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> queue_;  // guarded by mutex_
  std::size_t queued_bytes_ = 0;    // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> rotations_{0};
  std::thread thread_;
};

}  // namespace rankd::service
