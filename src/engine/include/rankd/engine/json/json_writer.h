// JsonWriter: the one way rankd writes JSON (responses, explain, the OpenAPI document, logs,
// experiment records). A streaming writer in the manner of Vespa's JsonStream: the caller says
// what comes next (BeginObject, Key, a value, EndObject, ...), the writer puts the punctuation
// (commas, colons) in and escapes strings as json::AppendJsonString does, and numbers as
// JSON.stringify writes them. No DOM: every call appends to the caller's string at once.
//
// The writer keeps a stack of the containers it has open. In debug and sanitizer builds
// (RANKD_D_ASSERT) it refuses what would not be one JSON document:
//
//   state of the innermost container    allowed next
//   ----------------------------------  -----------------------------------------------
//   (top level, nothing written)        one value (BeginObject/BeginArray/scalar/Raw)
//   object, a key is due                Key, EndObject
//   object, after Key                   one value
//   array                               a value, EndArray
//   (top level, one value written)      nothing
//
// so a value where a key is due, a key in an array, EndObject for an array (or EndArray for an
// object), an end with nothing open and a second top-level value each abort there. In release
// builds the checks compile to nothing and a wrong sequence writes wrong JSON.
//
// Thread affinity: none; one thread at a time. Ownership: appends to a string the caller owns and
// keeps alive while the writer is used; the writer owns only its stack of open containers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::engine::json {

class JsonWriter {
 public:
  // Writes one JSON document at the end of `out` (which may already hold text: the writer only
  // appends).
  explicit JsonWriter(std::string& out) : out_(out) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // A member's name; its value comes next.
  JsonWriter& Key(std::string_view name);

  JsonWriter& String(std::string_view text);
  JsonWriter& Int(std::int64_t value);
  JsonWriter& Uint(std::uint64_t value);
  // Written as ECMAScript's Number.prototype.toString writes it; JSON has no NaN or infinity:
  // those throw std::invalid_argument (json::AppendEcmaScriptNumber) and write nothing.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // One value already serialised as JSON (a plan's own text, a generated schema fragment),
  // written as it is. It must be one JSON value; the writer does not read it.
  JsonWriter& Raw(std::string_view json);

  // Shorthands for a member: Key(name) then the value.
  JsonWriter& Member(std::string_view name, std::string_view text) {
    return Key(name).String(text);
  }
  JsonWriter& Member(std::string_view name, const char* text) { return Key(name).String(text); }
  JsonWriter& Member(std::string_view name, std::int64_t value) { return Key(name).Int(value); }
  JsonWriter& Member(std::string_view name, bool value) { return Key(name).Bool(value); }

  // Whether one whole value has been written and every container closed.
  bool Complete() const { return stack_.empty() && top_level_written_; }
  // How many containers are open.
  std::size_t Depth() const { return stack_.size(); }

 private:
  enum class Frame : std::uint8_t {
    kObjectFirstKey,  // an object with no member yet: a key (or EndObject) is due
    kObjectKey,       // an object after a member: a comma and a key (or EndObject) are due
    kObjectValue,     // after Key: the member's value is due
    kArrayFirst,      // an array with no element yet
    kArrayNext,       // an array after an element: a comma and a value (or EndArray) are due
  };

  // Writes what goes before a value (a comma in an array) and records that it was written.
  void BeforeValue();

  std::string& out_;
  std::vector<Frame> stack_;
  bool top_level_written_ = false;
};

}  // namespace rankd::engine::json
