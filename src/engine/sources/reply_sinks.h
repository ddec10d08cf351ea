// Sinks that decode Redis replies straight into a request's columns (the redis client's sink
// interface, redis/sinks.h): the ids of a list (LRANGE), the fields of a hash (HGETALL), the
// values of named fields (HMGET). Values follow the engine's rules (value_parsers.h): a value
// that does not parse is null and counted, a list element that is not an int is dropped and
// counted, strings are validated as UTF-8 and copied into the node's arena (the reply buffer is
// gone after the call).
//
// A reply of the wrong shape (an error, a scalar where an array belongs, a nested aggregate)
// leaves what the sink wrote so far and records why: the node reports it as an upstream error.
//
// A sink may be handed its command's reply more than once: a Cluster client sends a node's
// pipeline again (to a replica, or after a reload) when its connection was lost, replies that
// had arrived included. The last reply is the answer: a sink handed a second reply starts over
// (a list from its first id; a row's fields null again), so nothing is read twice. DecodeCounts
// count every reply handed over.
//
// Each sink has a decoded form (redis/sinks.h, DecodedForm), which a feature cache keeps in place
// of the reply's bytes: the values as the sink decoded them (after the value rules: ints, floats,
// bools, validated strings, nulls) with the counts of its last reply. Applying it fills the sink's
// columns and counts exactly as being handed the reply again would, without parsing: a row's
// values are copied, a string into the node's arena. Its layout names the sink's kind and its
// columns' types (and, for HGETALL, the fields kept), so a sink only ever applies a form encoded
// by a sink that decodes the same command the same way. A reply of the wrong shape has no
// decoded form (the cache keeps its bytes).
//
// Thread affinity: the thread that parses the reply (a shard's loop). Ownership: sinks borrow the
// columns, the arena and the counters, which outlive the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/column.h"
#include "rankd/redis/resp.h"
#include "rankd/redis/sinks.h"

namespace rankd::engine {

// What the sinks of one node counted.
struct DecodeCounts {
  std::uint64_t values = 0;       // values decoded
  std::uint64_t unparsable = 0;   // values that did not parse (null)
  std::uint64_t dropped = 0;      // list elements that were not ints
  std::uint64_t reply_bytes = 0;  // bytes of the values read
};

// Where a reply's problem is recorded: the first one wins.
class ReplyProblem {
 public:
  void Set(std::string message) {
    if (message_.empty()) message_ = std::move(message);
  }
  bool ok() const noexcept { return message_.empty(); }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// What one sink counted of its last reply (its decoded form keeps it).
struct ReplyTally {
  std::uint32_t values = 0;
  std::uint32_t unparsable = 0;
  std::uint32_t dropped = 0;
  std::uint32_t reply_bytes = 0;
};

// LRANGE: up to `capacity` int ids into `out`.
class IdListSink : public redis::NullSink {
 public:
  IdListSink(std::int64_t* out, std::size_t capacity, DecodeCounts* counts, ReplyProblem* problem)
      : out_(out), capacity_(capacity), counts_(counts), problem_(problem) {}

  static const redis::DecodedForm kDecodedForm;

  std::size_t size() const noexcept { return size_; }

  void OnAggregateBegin(redis::Type type, std::size_t);
  void OnAggregateEnd(redis::Type) { --depth_; }
  void OnBulk(std::string_view text) { Element(text); }
  void OnSimpleString(std::string_view text) { Element(text); }
  void OnInteger(std::int64_t v);
  void OnNull();
  void OnError(std::string_view message) {
    odd_ = true;
    problem_->Set(std::string(message));
  }
  void OnDouble(double) { Unexpected("a double"); }
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnVerbatim(std::string_view, std::string_view) { Unexpected("a verbatim string"); }
  void OnBigNumber(std::string_view) { Unexpected("a big number"); }

 private:
  void Element(std::string_view text);
  void Unexpected(std::string_view what);
  void Push(std::int64_t id);
  // A reply begins (a value at depth 0): a second one replaces the first.
  void BeginReply() {
    if (replied_) {
      size_ = 0;
      tally_ = {};
    }
    replied_ = true;
  }
  static std::uint64_t Layout(const void* sink) noexcept;
  static bool Encode(const void* sink, std::string* out);
  static void Apply(void* sink, std::string_view decoded);

  std::int64_t* out_;
  std::size_t capacity_;
  std::size_t size_ = 0;
  int depth_ = 0;
  bool replied_ = false;  // a reply was handed over
  bool odd_ = false;      // a reply was not of the expected shape
  ReplyTally tally_;      // of the last reply
  DecodeCounts* counts_;
  ReplyProblem* problem_;
};

// SMISMEMBER: an array of one 0 or 1 per id sent, into `out` (1: the set has the id). Any other
// reply (an error, another aggregate type, a count other than `expected`, an element that is not
// 0 or 1, a nested aggregate, a scalar) is recorded as the reply's problem. A second reply starts
// over. It has no decoded form: set schemas have no feature cache (docs/plan-format.md, "The
// registry").
class MembershipSink : public redis::NullSink {
 public:
  MembershipSink(std::uint8_t* out, std::size_t expected, ReplyProblem* problem)
      : out_(out), expected_(expected), problem_(problem) {}

  // True once a whole reply of `expected` flags was handed over.
  bool complete() const noexcept { return replied_ && !odd_ && got_ == expected_; }

  void OnAggregateBegin(redis::Type type, std::size_t n);
  void OnAggregateEnd(redis::Type) { --depth_; }
  void OnInteger(std::int64_t v);
  void OnError(std::string_view message) {
    odd_ = true;
    problem_->Set(std::string(message));
  }
  void OnNull() { Unexpected("a null"); }
  void OnBulk(std::string_view) { Unexpected("a string"); }
  void OnSimpleString(std::string_view) { Unexpected("a string"); }
  void OnDouble(double) { Unexpected("a double"); }
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnVerbatim(std::string_view, std::string_view) { Unexpected("a verbatim string"); }
  void OnBigNumber(std::string_view) { Unexpected("a big number"); }

 private:
  void Unexpected(std::string_view what);

  std::uint8_t* out_;
  std::size_t expected_;
  std::size_t got_ = 0;
  int depth_ = 0;
  bool replied_ = false;
  bool odd_ = false;
  ReplyProblem* problem_;
};

// Writes one text value into `column` at `row` by the column's type (null when it does not
// parse: returns false); into a pending column (columns/column.h), a copy of the text, parsed
// when a node reads it. Shared by the hash sinks. A sink whose decoded form a feature cache
// keeps never writes into a pending column.
bool StoreValue(std::string_view text, Column* column, std::size_t row, Arena& arena,
                DecodeCounts* counts);

// HGETALL: the fields named in `fields` (the schema's yields) into their columns at `row`;
// other fields are ignored. A missing hash is an empty reply: every field null.
class HashFieldsSink : public redis::NullSink {
 public:
  // columns[i] receives fields[i]'s value.
  HashFieldsSink(std::span<const std::string> fields, std::span<Column* const> columns,
                 std::size_t row, Arena* arena, DecodeCounts* counts, ReplyProblem* problem)
      : fields_(fields),
        columns_(columns),
        row_(row),
        arena_(arena),
        counts_(counts),
        problem_(problem) {}

  static const redis::DecodedForm kDecodedForm;

  void OnAggregateBegin(redis::Type type, std::size_t);
  void OnAggregateEnd(redis::Type) { --depth_; }
  void OnBulk(std::string_view text) { Text(text); }
  void OnSimpleString(std::string_view text) { Text(text); }
  void OnVerbatim(std::string_view, std::string_view text) { Text(text); }
  void OnInteger(std::int64_t v);
  void OnDouble(double v);
  void OnNull() { Text(std::string_view(), true); }
  void OnError(std::string_view message) {
    odd_ = true;
    problem_->Set(std::string(message));
  }
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnBigNumber(std::string_view text) { Text(text); }

 private:
  void Text(std::string_view text, bool null = false);
  void Unexpected(std::string_view what);
  // A reply begins (a value at depth 0): a second one starts from a row of nulls.
  void BeginReply();
  static std::uint64_t Layout(const void* sink) noexcept;
  static bool Encode(const void* sink, std::string* out);
  static void Apply(void* sink, std::string_view decoded);

  std::span<const std::string> fields_;
  std::span<Column* const> columns_;
  std::size_t row_;
  Arena* arena_;
  DecodeCounts* counts_;
  ReplyProblem* problem_;
  int depth_ = 0;
  bool key_next_ = true;       // alternates field name, value
  std::ptrdiff_t field_ = -1;  // the wanted field whose value comes next (-1: not wanted)
  bool replied_ = false;       // a reply was handed over
  bool odd_ = false;           // a reply was not of the expected shape
  ReplyTally tally_;           // of the last reply
};

// HMGET: value i into columns[i] at `row` (a nil is null).
class FieldValuesSink : public redis::NullSink {
 public:
  FieldValuesSink(std::span<Column* const> columns, std::size_t row, Arena* arena,
                  DecodeCounts* counts, ReplyProblem* problem)
      : columns_(columns), row_(row), arena_(arena), counts_(counts), problem_(problem) {}

  static const redis::DecodedForm kDecodedForm;

  void OnAggregateBegin(redis::Type type, std::size_t values);
  void OnAggregateEnd(redis::Type) { --depth_; }
  void OnBulk(std::string_view text) { Value(text, false); }
  void OnSimpleString(std::string_view text) { Value(text, false); }
  void OnVerbatim(std::string_view, std::string_view text) { Value(text, false); }
  void OnInteger(std::int64_t v);
  void OnDouble(double v);
  void OnNull() { Value(std::string_view(), true); }
  void OnError(std::string_view message) {
    odd_ = true;
    problem_->Set(std::string(message));
  }
  void OnBoolean(bool) { Unexpected("a boolean"); }
  void OnBigNumber(std::string_view text) { Value(text, false); }

 private:
  void Value(std::string_view text, bool null);
  void Unexpected(std::string_view what);
  // A reply begins (a value at depth 0): a second one starts from a row of nulls.
  void BeginReply();
  static std::uint64_t Layout(const void* sink) noexcept;
  static bool Encode(const void* sink, std::string* out);
  static void Apply(void* sink, std::string_view decoded);

  std::span<Column* const> columns_;
  std::size_t row_;
  Arena* arena_;
  DecodeCounts* counts_;
  ReplyProblem* problem_;
  int depth_ = 0;
  std::size_t next_ = 0;
  bool replied_ = false;  // a reply was handed over
  bool odd_ = false;      // a reply was not of the expected shape
  ReplyTally tally_;      // of the last reply
};

}  // namespace rankd::engine
