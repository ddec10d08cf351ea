// JsonWriter (rankd/engine/json/json_writer.h).
#include "rankd/engine/json/json_writer.h"

#include <charconv>
#include <cmath>

#include "json/number_format.h"
#include "rankd/engine/json/json_text.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine::json {

void JsonWriter::BeforeValue() {
  if (stack_.empty()) {
    RANKD_D_ASSERT(!top_level_written_ && "a second top-level value");
    top_level_written_ = true;
    return;
  }
  Frame& frame = stack_.back();
  switch (frame) {
    case Frame::kObjectValue:
      frame = Frame::kObjectKey;
      return;
    case Frame::kArrayFirst:
      frame = Frame::kArrayNext;
      return;
    case Frame::kArrayNext:
      out_ += ',';
      return;
    case Frame::kObjectFirstKey:
    case Frame::kObjectKey:
      RANKD_D_ASSERT(false && "a value where a key is due");
      return;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  stack_.push_back(Frame::kObjectFirstKey);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  RANKD_D_ASSERT(!stack_.empty() && "EndObject with nothing open");
  RANKD_D_ASSERT((stack_.back() == Frame::kObjectFirstKey || stack_.back() == Frame::kObjectKey) &&
                 "EndObject for an array or before a key's value");
  out_ += '}';
  stack_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  stack_.push_back(Frame::kArrayFirst);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  RANKD_D_ASSERT(!stack_.empty() && "EndArray with nothing open");
  RANKD_D_ASSERT((stack_.back() == Frame::kArrayFirst || stack_.back() == Frame::kArrayNext) &&
                 "EndArray for an object");
  out_ += ']';
  stack_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view name) {
  RANKD_D_ASSERT(!stack_.empty() && "a key outside an object");
  Frame& frame = stack_.back();
  RANKD_D_ASSERT((frame == Frame::kObjectFirstKey || frame == Frame::kObjectKey) &&
                 "a key in an array or where a value is due");
  if (frame == Frame::kObjectKey) out_ += ',';
  frame = Frame::kObjectValue;
  AppendJsonString(out_, name);
  out_ += ':';
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view text) {
  BeforeValue();
  AppendJsonString(out_, text);
  return *this;
}

JsonWriter& JsonWriter::Int(std::int64_t value) {
  BeforeValue();
  AppendInt64(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Uint(std::uint64_t value) {
  BeforeValue();
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, static_cast<std::size_t>(result.ptr - buf));
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  // A NaN or an infinity throws here, before anything is written (as AppendEcmaScriptNumber
  // does): callers that may meet one catch it, as they did before the writer.
  if (!std::isfinite(value)) AppendEcmaScriptNumber(out_, value);
  BeforeValue();
  AppendEcmaScriptNumber(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  RANKD_D_ASSERT(!json.empty() && "Raw with no value");
  BeforeValue();
  out_ += json;
  return *this;
}

}  // namespace rankd::engine::json
