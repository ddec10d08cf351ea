#include "rankd/bench_report/json_object_writer.h"

#include <cmath>
#include <cstdio>

namespace rankd::bench_report {

void JsonObjectWriter::Key(std::string_view key) {
  out_ += first_ ? "\n" : ",\n";
  out_.append(static_cast<std::size_t>(depth_) * 2, ' ');
  out_ += '"';
  out_ += key;
  out_ += "\": ";
  first_ = false;
}

void JsonObjectWriter::Open(std::string_view key) {
  Key(key);
  out_ += '{';
  ++depth_;
  first_ = true;
}

void JsonObjectWriter::Close() {
  --depth_;
  out_ += '\n';
  out_.append(static_cast<std::size_t>(depth_) * 2, ' ');
  out_ += '}';
  first_ = false;
}

void JsonObjectWriter::Int(std::string_view key, std::int64_t value) {
  Key(key);
  out_ += std::to_string(value);
}

void JsonObjectWriter::AppendNum(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(value) ? value : 0.0);
  out_ += buf;
}

void JsonObjectWriter::Num(std::string_view key, double value) {
  Key(key);
  AppendNum(value);
}

template <typename T, typename AppendValue>
void JsonObjectWriter::Array(std::string_view key, std::span<const T> values,
                             AppendValue append_value) {
  Key(key);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out_ += ", ";
    append_value(values[i]);
  }
  out_ += ']';
}

void JsonObjectWriter::IntArray(std::string_view key, std::span<const std::int64_t> values) {
  Array(key, values, [this](std::int64_t v) { out_ += std::to_string(v); });
}

void JsonObjectWriter::NumArray(std::string_view key, std::span<const double> values) {
  Array(key, values, [this](double v) { AppendNum(v); });
}

}  // namespace rankd::bench_report
