// Sinks that decode replies straight into typed columns, without a reply tree.
//
//   Int64ListSink: an array of integers (bulk strings holding integers, as LRANGE and
//   ZRANGE return them, or RESP integers) appended to a std::vector<std::int64_t>.
//   HmgetRowSink: one HMGET reply appended as one row of typed columns, field i to column i.
//
// Each sink decodes one reply, once: they append, so they are not for calls a ClusterClient may
// resend (sinks.h). On a reply it cannot take (an error reply, a nested aggregate,
// a wrong field count) it appends nothing, and ok() is false with error() saying why.
// Thread affinity: the parsing thread; the columns must outlive the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rankd/redis/reply_parser.h"
#include "rankd/redis/sinks.h"

namespace rankd::redis {

class Int64ListSink : public NullSink {
 public:
  explicit Int64ListSink(std::vector<std::int64_t>* out) : out_(out), start_(out->size()) {}

  void OnSimpleString(std::string_view) { Unexpected("a simple string"); }
  void OnError(std::string_view message);
  void OnInteger(std::int64_t v) { Append(v); }
  // Inline for the common case (an integer element of a healthy array).
  void OnBulk(std::string_view text) {
    std::int64_t v = 0;
    if (depth_ == 1 && error_.empty() && detail::ParseInt64(text, &v)) {
      out_->push_back(v);
      return;
    }
    OnUnusualBulk(text);
  }
  void OnVerbatim(std::string_view, std::string_view) { Unexpected("a verbatim string"); }
  void OnBigNumber(std::string_view) { Unexpected("a big number"); }
  void OnDouble(double) { Unexpected("a double"); }
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnNull();
  void OnAggregateBegin(Type type, std::size_t values);
  void OnAggregateEnd(Type) { --depth_; }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // True when the reply was an error from the server (error() holds its message).
  bool server_error() const { return server_error_; }

 private:
  void Append(std::int64_t v);
  void OnUnusualBulk(std::string_view text);
  void Unexpected(std::string_view what);
  void Fail(std::string message);

  std::vector<std::int64_t>* out_;
  std::size_t start_;  // out_'s size before this reply, restored on failure
  int depth_ = 0;
  bool server_error_ = false;
  std::string error_;
};

// A typed column of a row-per-reply table. Missing fields (HMGET's nil) are nullopt.
using DoubleColumn = std::vector<std::optional<double>>;
using Int64Column = std::vector<std::optional<std::int64_t>>;
using StringColumn = std::vector<std::optional<std::string>>;
using Column = std::variant<DoubleColumn, Int64Column, StringColumn>;

class HmgetRowSink : public NullSink {
 public:
  // columns[i] receives field i of the reply; the reply must have exactly columns.size() fields.
  explicit HmgetRowSink(std::span<Column> columns) : columns_(columns) {}

  void OnSimpleString(std::string_view s) { Value(s); }
  void OnError(std::string_view message);
  void OnInteger(std::int64_t v);
  void OnBulk(std::string_view s) { Value(s); }
  void OnVerbatim(std::string_view, std::string_view text) { Value(text); }
  void OnBigNumber(std::string_view digits) { Value(digits); }
  void OnDouble(double v);
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnNull();
  void OnAggregateBegin(Type type, std::size_t values);
  void OnAggregateEnd(Type) { --depth_; }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool server_error() const { return server_error_; }
  // Fields present but not convertible to their column's type (stored as nullopt).
  std::size_t conversion_failures() const { return conversion_failures_; }

 private:
  bool Accepting();
  void Value(std::string_view text);
  void Unexpected(std::string_view what);
  void Fail(std::string message);

  std::span<Column> columns_;
  std::size_t field_ = 0;  // next field's column
  int depth_ = 0;
  bool server_error_ = false;
  std::size_t conversion_failures_ = 0;
  std::string error_;
};

}  // namespace rankd::redis
