// Column sinks: integer lists (LRANGE) and HMGET rows into typed columns.
#include "rankd/redis/column_sinks.h"

#include <charconv>

#include "rankd/redis/reply_parser.h"

namespace rankd::redis {

namespace {

bool ToInt64(std::string_view text, std::int64_t* out) { return detail::ParseInt64(text, out); }

bool ToDouble(std::string_view text, double* out) { return detail::ParseDouble(text, out); }

}  // namespace

// ---- Int64ListSink ----

void Int64ListSink::Fail(std::string message) {
  if (!error_.empty()) return;
  error_ = std::move(message);
  out_->resize(start_);
}

void Int64ListSink::Unexpected(std::string_view what) {
  Fail("expected an array of integers, found " + std::string(what));
}

void Int64ListSink::OnError(std::string_view message) {
  if (!error_.empty()) return;
  server_error_ = depth_ == 0;
  Fail(std::string(message));
}

void Int64ListSink::OnNull() {
  // A null in place of the whole array (RESP2 "*-1") is an empty list; inside it, a hole.
  if (depth_ != 0) Unexpected("a null element");
}

void Int64ListSink::OnAggregateBegin(Type type, std::size_t values) {
  ++depth_;
  if (depth_ > 1 || (type != Type::kArray && type != Type::kSet && type != Type::kPush)) {
    Unexpected(depth_ > 1 ? "a nested aggregate" : TypeName(type));
    return;
  }
  if (error_.empty()) out_->reserve(out_->size() + values);
}

void Int64ListSink::Append(std::int64_t v) {
  if (depth_ != 1) {
    Unexpected("a single value");
    return;
  }
  if (error_.empty()) out_->push_back(v);
}

void Int64ListSink::OnUnusualBulk(std::string_view text) {
  std::int64_t v = 0;
  if (!ToInt64(text, &v)) {
    if (!error_.empty()) return;
    std::string shown(text.substr(0, 32));
    Fail("element " + std::to_string(out_->size() - start_) + " is not an integer: '" + shown +
         "'");
    return;
  }
  Append(v);
}

// ---- HmgetRowSink ----

void HmgetRowSink::Fail(std::string message) {
  if (!error_.empty()) return;
  error_ = std::move(message);
  // Take back the fields of this row already appended.
  for (std::size_t i = 0; i < field_ && i < columns_.size(); ++i) {
    std::visit([](auto& column) { column.pop_back(); }, columns_[i]);
  }
}

void HmgetRowSink::Unexpected(std::string_view what) {
  Fail("expected an array of " + std::to_string(columns_.size()) + " fields, found " +
       std::string(what));
}

bool HmgetRowSink::Accepting() {
  if (!error_.empty()) return false;
  if (depth_ != 1) {
    Unexpected(depth_ == 0 ? "a single value" : "a nested aggregate");
    return false;
  }
  return true;
}

void HmgetRowSink::OnError(std::string_view message) {
  if (!error_.empty()) return;
  server_error_ = depth_ == 0;
  Fail(std::string(message));
}

void HmgetRowSink::OnAggregateBegin(Type type, std::size_t values) {
  ++depth_;
  if (!error_.empty()) return;
  if (depth_ > 1) {
    Unexpected("a nested aggregate");
  } else if (type != Type::kArray) {
    Unexpected(TypeName(type));
  } else if (values != columns_.size()) {
    Unexpected("an array of " + std::to_string(values));
  }
}

void HmgetRowSink::OnNull() {
  if (!Accepting()) return;
  std::visit([](auto& column) { column.emplace_back(std::nullopt); }, columns_[field_++]);
}

void HmgetRowSink::Value(std::string_view text) {
  if (!Accepting()) return;
  Column& column = columns_[field_++];
  if (auto* doubles = std::get_if<DoubleColumn>(&column)) {
    double v = 0;
    if (ToDouble(text, &v)) {
      doubles->emplace_back(v);
    } else {
      doubles->emplace_back(std::nullopt);
      ++conversion_failures_;
    }
  } else if (auto* ints = std::get_if<Int64Column>(&column)) {
    std::int64_t v = 0;
    if (ToInt64(text, &v)) {
      ints->emplace_back(v);
    } else {
      ints->emplace_back(std::nullopt);
      ++conversion_failures_;
    }
  } else {
    std::get<StringColumn>(column).emplace_back(std::string(text));
  }
}

void HmgetRowSink::OnInteger(std::int64_t v) {
  if (!Accepting()) return;
  Column& column = columns_[field_++];
  if (auto* doubles = std::get_if<DoubleColumn>(&column)) {
    doubles->emplace_back(static_cast<double>(v));
  } else if (auto* ints = std::get_if<Int64Column>(&column)) {
    ints->emplace_back(v);
  } else {
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof(digits), v).ptr;
    std::get<StringColumn>(column).emplace_back(std::string(digits, end));
  }
}

void HmgetRowSink::OnDouble(double v) {
  if (!Accepting()) return;
  Column& column = columns_[field_++];
  if (auto* doubles = std::get_if<DoubleColumn>(&column)) {
    doubles->emplace_back(v);
  } else if (auto* strings = std::get_if<StringColumn>(&column)) {
    char digits[32];
    char* end = std::to_chars(digits, digits + sizeof(digits), v).ptr;
    strings->emplace_back(std::string(digits, end));
  } else {
    std::get<Int64Column>(column).emplace_back(std::nullopt);
    ++conversion_failures_;
  }
}

}  // namespace rankd::redis
