// Reply: an owning tree of one decoded reply, and ReplyBuilder, the sink that builds it.
//
// For tests, tools and callers that want the whole reply as a value. Hot paths decode into
// their own sinks instead (see sinks.h and column_sinks.h): building a tree allocates.
//
// Plain values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/resp.h"
#include "rankd/redis/sinks.h"

namespace rankd::redis {

struct Reply {
  Type type = Type::kNull;
  // Simple string, error message, bulk string, big number digits, verbatim text.
  std::string str;
  // Verbatim strings only: the three-letter format ("txt", "mkd").
  std::string format;
  std::int64_t integer = 0;
  double number = 0;  // kDouble
  bool boolean = false;
  // Arrays, sets and pushes: their values. Maps: keys and values alternating.
  std::vector<Reply> elements;
  // Attributes sent just before this value (keys and values alternating), when exposed.
  std::vector<Reply> attributes;
  // How many entries each attribute map sent before the value holds, in order: RESP3 lets several
  // maps in a row describe one value, and `attributes` holds them all. Empty: one map (or none).
  std::vector<std::size_t> attribute_maps;

  // The entries of each attribute map before the value, in order (none: empty).
  std::vector<std::size_t> AttributeMaps() const {
    if (!attribute_maps.empty() || attributes.empty()) return attribute_maps;
    return {attributes.size() / 2};
  }

  static Reply Null() { return Reply{}; }
  static Reply Simple(std::string_view s) { return Text(Type::kSimpleString, s); }
  static Reply Error(std::string_view s) { return Text(Type::kError, s); }
  static Reply Bulk(std::string_view s) { return Text(Type::kBulkString, s); }
  static Reply Integer(std::int64_t v) {
    Reply r;
    r.type = Type::kInteger;
    r.integer = v;
    return r;
  }
  static Reply Aggregate(Type type, std::vector<Reply> elements) {
    Reply r;
    r.type = type;
    r.elements = std::move(elements);
    return r;
  }
  static Reply Text(Type type, std::string_view s) {
    Reply r;
    r.type = type;
    r.str = s;
    return r;
  }

  bool is_error() const { return type == Type::kError; }
  bool is_null() const { return type == Type::kNull; }
  // For a map: the value stored under `key` (a string-like key), or nullptr.
  const Reply* Find(std::string_view key) const;

  // Doubles compare by bit pattern class: nan equals nan, so round-trip tests can compare.
  bool operator==(const Reply& other) const;
  // The same attributes, in the same maps.
  bool SameAttributes(const Reply& other) const;

  // One line, e.g. [bulk "a", int 1, {simple "k": null}], strings escaped.
  std::string DebugString() const;
};

// Builds a Reply from the parser's calls. One builder per reply; take the result with Take().
class ReplyBuilder {
 public:
  void OnSimpleString(std::string_view s) { Add(Reply::Text(Type::kSimpleString, s)); }
  void OnError(std::string_view s) { Add(Reply::Text(Type::kError, s)); }
  void OnInteger(std::int64_t v) { Add(Reply::Integer(v)); }
  void OnBulk(std::string_view s) { Add(Reply::Text(Type::kBulkString, s)); }
  void OnVerbatim(std::string_view format, std::string_view text);
  void OnBigNumber(std::string_view digits) { Add(Reply::Text(Type::kBigNumber, digits)); }
  void OnDouble(double v);
  void OnBoolean(bool v);
  void OnNull() { Add(Reply{}); }
  void OnAggregateBegin(Type type, std::size_t values);
  void OnAggregateEnd(Type type);

  bool done() const { return done_; }
  Reply Take() {
    done_ = false;
    return std::move(root_);
  }

 private:
  // A finished value (is_aggregate_end: an aggregate whose attributes it already took).
  void Add(Reply value, bool is_aggregate_end = false);
  // Moves the pending attribute maps onto `value` (the value they describe, or an attribute
  // right after them that holds them while it is read).
  void TakePendingAttributes(Reply& value);

  std::vector<Reply> open_;  // aggregates begun and not yet ended, outermost first
  std::optional<Reply> pending_attribute_;
  Reply root_;
  bool done_ = false;
};

}  // namespace rankd::redis
