// A minimal JSON writer for the benchmark reports: nested objects of numbers and arrays of
// numbers, two-space indentation, keys in the order they are added. The text it builds is the
// body of the top-level object (the caller prints the outer braces), starting at depth 1. Keys
// are written as given (the reports' keys need no escape).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rankd::bench_report {

// One report's JSON text. Single-threaded (the benchmark's main thread); owns its text.
class JsonObjectWriter {
 public:
  // Opens a nested object under `key`; Close() ends it.
  void Open(std::string_view key);
  void Close();
  void Int(std::string_view key, std::int64_t value);
  // Three decimals; NaN and infinity (which JSON lacks) are written as 0.
  void Num(std::string_view key, double value);
  // The values on one line: "key": [1, 2, 3].
  void IntArray(std::string_view key, std::span<const std::int64_t> values);
  // The values on one line, each as Num() writes it: "key": [1.250, 0.000].
  void NumArray(std::string_view key, std::span<const double> values);

  const std::string& text() const { return out_; }

 private:
  void Key(std::string_view key);
  void AppendNum(double value);
  // "key": [v1, v2, ...], each value written by append_value.
  template <typename T, typename AppendValue>
  void Array(std::string_view key, std::span<const T> values, AppendValue append_value);

  std::string out_;
  int depth_ = 1;
  bool first_ = true;
};

}  // namespace rankd::bench_report
