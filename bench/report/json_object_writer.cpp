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

void JsonObjectWriter::Num(std::string_view key, double value) {
  Key(key);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(value) ? value : 0.0);
  out_ += buf;
}

void JsonObjectWriter::IntArray(std::string_view key, std::span<const std::int64_t> values) {
  Key(key);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out_ += ", ";
    out_ += std::to_string(values[i]);
  }
  out_ += ']';
}

}  // namespace rankd::bench_report
