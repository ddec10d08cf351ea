// LineFileWriter: lines offered from several threads all reach the file, each thread's in its
// order, by the time the writer is destroyed; a line the queue cannot hold is dropped and
// counted; a path that cannot be opened is an error naming it.
#include "rankd/service/line_file_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rankd::service {
namespace {

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("rankd-line-writer-" + std::to_string(::getpid()) + "-" + name);
}

TEST(LineFileWriterTest, EveryLineOfEveryThreadIsWrittenInItsThreadsOrder) {
  const std::filesystem::path path = TempPath("order");
  std::filesystem::remove(path);
  constexpr int kThreads = 4;
  constexpr int kLines = 2000;
  {
    LineFileWriter writer(path.string());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < kLines; ++i) {
          EXPECT_TRUE(writer.Offer(std::to_string(t) + " " + std::to_string(i) + "\n"));
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }  // the destructor writes what is queued
  std::ifstream in(path);
  std::map<int, int> next;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int t = -1, i = -1;
    fields >> t >> i;
    ASSERT_EQ(i, next[t]) << "thread " << t;
    ++next[t];
    ++lines;
  }
  EXPECT_EQ(lines, kThreads * kLines);
  std::filesystem::remove(path);
}

TEST(LineFileWriterTest, ALineTheQueueCannotHoldIsDroppedAndCounted) {
  const std::filesystem::path path = TempPath("drop");
  std::filesystem::remove(path);
  {
    LineFileWriter writer(path.string(), {.max_queued_bytes = 16});
    EXPECT_FALSE(writer.Offer(std::string(40, 'x') + "\n"));
    EXPECT_TRUE(writer.Offer("short\n"));
    EXPECT_EQ(writer.dropped(), 1u);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "short\n");
  // Appends to what the file holds.
  {
    LineFileWriter writer(path.string());
    writer.Offer("again\n");
  }
  std::ifstream again(path);
  std::stringstream both;
  both << again.rdbuf();
  EXPECT_EQ(both.str(), "short\nagain\n");
  std::filesystem::remove(path);
}

std::string Contents(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LineFileWriterTest, RotatesPastItsSizeKeepingTheNewestFiles) {
  const std::filesystem::path path = TempPath("rotate");
  for (const char* suffix : {"", ".1", ".2", ".3"}) std::filesystem::remove(path.string() + suffix);
  // 12 lines of 30 bytes, each written before the next is offered: the file rotates after
  // every 4th (120 bytes >= 100), and of the three rotated files the two newest are kept.
  const auto line = [](int i) {
    return "line " + std::to_string(100 + i) + std::string(21, '.') + "\n";
  };
  {
    LineFileWriter writer(path.string(), {.rotate_bytes = 100, .keep = 2});
    for (int i = 1; i <= 12; ++i) {
      ASSERT_EQ(line(i).size(), 30u);
      ASSERT_TRUE(writer.Offer(line(i)));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (writer.written() < static_cast<std::uint64_t>(i)) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "line " << i << " not written";
        std::this_thread::yield();
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (writer.rotations() < 3) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "not rotated";
      std::this_thread::yield();
    }
    EXPECT_EQ(writer.rotations(), 3u);
  }
  const auto lines = [&](int from, int to) {
    std::string text;
    for (int i = from; i <= to; ++i) text += line(i);
    return text;
  };
  EXPECT_EQ(Contents(path.string() + ".2"), lines(5, 8));
  EXPECT_EQ(Contents(path.string() + ".1"), lines(9, 12));
  EXPECT_EQ(Contents(path), "");
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".3"));
  for (const char* suffix : {"", ".1", ".2"}) std::filesystem::remove(path.string() + suffix);
}

TEST(LineFileWriterTest, APathThatCannotBeOpenedIsAnErrorNamingIt) {
  try {
    LineFileWriter writer("/nonexistent-dir/captures.jsonl");
    FAIL() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/captures.jsonl: cannot open"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rankd::service
