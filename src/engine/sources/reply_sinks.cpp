#include "reply_sinks.h"

#include <charconv>
#include <cstdio>

#include "rankd/engine/values/value_parsers.h"

namespace rankd::engine {
namespace {

bool IsArrayLike(redis::Type type) {
  return type == redis::Type::kArray || type == redis::Type::kSet || type == redis::Type::kMap;
}

// RESP3 integers and doubles in a hash or list reply: written back as text so one rule applies.
std::string_view AsText(std::int64_t v, char (&buf)[32]) {
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
}
std::string_view AsText(double v, char (&buf)[32]) {
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
}

}  // namespace

// ---- IdListSink ----

void IdListSink::OnAggregateBegin(redis::Type type, std::size_t) {
  if (depth_ == 0) BeginReply();
  ++depth_;
  if (depth_ > 1) Unexpected("a nested aggregate");
  if (!IsArrayLike(type) || type == redis::Type::kMap) Unexpected(redis::TypeName(type));
}

void IdListSink::OnNull() {
  // A null in place of the whole list (RESP2 "*-1") is no list; an element that is null is not
  // an int.
  if (depth_ == 0) {
    BeginReply();
    return;
  }
  ++counts_->dropped;
}

void IdListSink::Unexpected(std::string_view what) {
  problem_->Set("expected a list of ids, the reply holds " + std::string(what));
}

void IdListSink::Push(std::int64_t id) {
  if (size_ < capacity_) out_[size_++] = id;
  ++counts_->values;
}

void IdListSink::OnInteger(std::int64_t v) {
  if (depth_ != 1) {
    Unexpected("an integer");
    return;
  }
  Push(v);
}

void IdListSink::Element(std::string_view text) {
  if (depth_ != 1) {
    Unexpected("a single string");
    return;
  }
  counts_->reply_bytes += text.size();
  if (const std::optional<std::int64_t> id = ParseIntValue(text)) {
    Push(*id);
  } else {
    ++counts_->dropped;
  }
}

// ---- values into columns ----

void StoreValue(std::string_view text, Column* column, std::size_t row, Arena& arena,
                DecodeCounts* counts) {
  counts->reply_bytes += text.size();
  ++counts->values;
  switch (column->type()) {
    case ValueType::kInt:
      if (const auto v = ParseIntValue(text)) {
        column->ints()[row] = *v;
        column->set_valid(row);
        return;
      }
      break;
    case ValueType::kFloat:
      if (const auto v = ParseFloatValue(text)) {
        column->floats()[row] = *v;
        column->set_valid(row);
        return;
      }
      break;
    case ValueType::kBool:
      if (const auto v = ParseBoolValue(text)) {
        column->bools()[row] = *v ? 1 : 0;
        column->set_valid(row);
        return;
      }
      break;
    case ValueType::kString:
      if (IsValidUtf8(text)) {
        column->strings()[row] = StringRef::Of(arena.CopyString(text));
        column->set_valid(row);
        return;
      }
      break;
  }
  ++counts->unparsable;
  column->set_null(row);
}

// ---- HashFieldsSink ----

void HashFieldsSink::BeginReply() {
  if (replied_) {
    for (Column* column : columns_) column->set_null(row_);
    key_next_ = true;
    field_ = -1;
  }
  replied_ = true;
}

void HashFieldsSink::OnAggregateBegin(redis::Type type, std::size_t) {
  if (depth_ == 0) BeginReply();
  ++depth_;
  if (depth_ > 1) Unexpected("a nested aggregate");
  if (!IsArrayLike(type)) Unexpected(redis::TypeName(type));
}

void HashFieldsSink::Unexpected(std::string_view what) {
  problem_->Set("expected the fields of a hash, the reply holds " + std::string(what));
}

void HashFieldsSink::Text(std::string_view text, bool null) {
  if (depth_ != 1) {
    if (null && depth_ == 0) {
      BeginReply();  // a null hash: no fields
    } else {
      Unexpected("a single value");
    }
    return;
  }
  if (key_next_) {
    key_next_ = false;
    field_ = -1;
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      if (fields_[i] == text) field_ = static_cast<std::ptrdiff_t>(i);
    }
    return;
  }
  key_next_ = true;
  if (field_ < 0) return;  // a field the schema does not yield
  Column* column = columns_[static_cast<std::size_t>(field_)];
  if (null) {
    column->set_null(row_);
    return;
  }
  StoreValue(text, column, row_, *arena_, counts_);
}

void HashFieldsSink::OnInteger(std::int64_t v) {
  char buf[32];
  Text(AsText(v, buf));
}

void HashFieldsSink::OnDouble(double v) {
  char buf[32];
  Text(AsText(v, buf));
}

// ---- FieldValuesSink ----

void FieldValuesSink::BeginReply() {
  if (replied_) {
    for (Column* column : columns_) column->set_null(row_);
    next_ = 0;
  }
  replied_ = true;
}

void FieldValuesSink::OnAggregateBegin(redis::Type type, std::size_t values) {
  if (depth_ == 0) BeginReply();
  ++depth_;
  if (depth_ > 1) Unexpected("a nested aggregate");
  if (!IsArrayLike(type) || type == redis::Type::kMap) Unexpected(redis::TypeName(type));
  if (depth_ == 1 && values != columns_.size()) {
    problem_->Set("expected " + std::to_string(columns_.size()) + " values, the reply holds " +
                  std::to_string(values));
  }
}

void FieldValuesSink::Unexpected(std::string_view what) {
  problem_->Set("expected the values of hash fields, the reply holds " + std::string(what));
}

void FieldValuesSink::Value(std::string_view text, bool null) {
  if (depth_ != 1) {
    Unexpected("a single value");
    return;
  }
  if (next_ >= columns_.size()) return;  // recorded in OnAggregateBegin
  Column* column = columns_[next_++];
  if (null) {
    column->set_null(row_);
    return;
  }
  StoreValue(text, column, row_, *arena_, counts_);
}

void FieldValuesSink::OnInteger(std::int64_t v) {
  char buf[32];
  Value(AsText(v, buf), false);
}

void FieldValuesSink::OnDouble(double v) {
  char buf[32];
  Value(AsText(v, buf), false);
}

}  // namespace rankd::engine
