#include "reply_sinks.h"

#include <charconv>
#include <cstdio>
#include <cstring>

#include "rankd/engine/columns/resolve.h"
#include "rankd/engine/values/value_parsers.h"
#include "rankd/runtime/debug_check.h"

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

// ---- decoded forms ----

// A layout: an FNV-1a hash of the sink's kind and what it decodes into, never 0 (0 is RESP's).
class LayoutHash {
 public:
  // Sinks name their kind with a constant (KindHash): its bytes are hashed at compile time.
  struct Kind {
    std::uint64_t h;
  };
  static constexpr Kind KindHash(std::string_view kind) noexcept {
    LayoutHash h;
    h.Add(kind);
    return {h.h_};
  }
  constexpr explicit LayoutHash(Kind kind) noexcept : h_(kind.h) {}
  constexpr void Add(std::string_view bytes) noexcept {
    for (const char c : bytes) Byte(static_cast<unsigned char>(c));
    Byte(0xff);  // ends a field, so that ("ab", "c") and ("a", "bc") differ
  }
  // A small number (a type, a count) in one step: sinks compute their layout per command.
  constexpr void Add(std::uint64_t v) noexcept { h_ = (h_ ^ v) * 0x100000001b3ULL; }
  std::uint64_t value() const noexcept { return h_ | 1; }

 private:
  constexpr LayoutHash() noexcept = default;
  constexpr void Byte(unsigned char b) noexcept { h_ = (h_ ^ b) * 0x100000001b3ULL; }
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

void AddColumnTypes(LayoutHash& h, std::span<Column* const> columns) noexcept {
  for (const Column* c : columns) h.Add(static_cast<std::uint64_t>(c->type()));
}

// A decoded form's bytes: the tally of the reply, then what the sink kept (written and read in
// the machine's byte order: a form never leaves the process).
void Put(std::string* out, const void* bytes, std::size_t n) {
  out->append(static_cast<const char*>(bytes), n);
}

class FormReader {
 public:
  explicit FormReader(std::string_view bytes) noexcept : bytes_(bytes) {}
  template <class T>
  T Get() noexcept {
    T v;
    RANKD_D_ASSERT(at_ + sizeof v <= bytes_.size());
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string_view Bytes(std::size_t n) noexcept {
    RANKD_D_ASSERT(at_ + n <= bytes_.size());
    const std::string_view v = bytes_.substr(at_, n);
    at_ += n;
    return v;
  }
  bool done() const noexcept { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

void AddTally(const ReplyTally& t, DecodeCounts* counts) noexcept {
  counts->values += t.values;
  counts->unparsable += t.unparsable;
  counts->dropped += t.dropped;
  counts->reply_bytes += t.reply_bytes;
}

// One row's values, column by column: a byte (1: a value follows; 0: null), then the value by
// the column's type (8 bytes for an int or float, 1 for a bool, a 4-byte size and the bytes for
// a string).
void EncodeRow(std::span<Column* const> columns, std::size_t row, std::string* out) {
  for (const Column* c : columns) {
    RANKD_D_ASSERT(!c->pending());  // a route through a feature cache decodes eagerly
    if (!c->valid(row)) {
      out->push_back(0);
      continue;
    }
    out->push_back(1);
    switch (c->type()) {
      case ValueType::kInt:
        Put(out, &c->ints()[row], sizeof(std::int64_t));
        break;
      case ValueType::kFloat:
        Put(out, &c->floats()[row], sizeof(double));
        break;
      case ValueType::kBool:
        out->push_back(static_cast<char>(c->bools()[row]));
        break;
      case ValueType::kString: {
        const StringRef v = c->strings()[row];
        Put(out, &v.size, sizeof v.size);
        out->append(v.data, v.size);
        break;
      }
    }
  }
}

void ApplyRow(FormReader& in, std::span<Column* const> columns, std::size_t row, Arena& arena) {
  for (Column* c : columns) {
    if (in.Get<std::uint8_t>() == 0) {
      c->set_null(row);
      continue;
    }
    switch (c->type()) {
      case ValueType::kInt:
        c->ints()[row] = in.Get<std::int64_t>();
        break;
      case ValueType::kFloat:
        c->floats()[row] = in.Get<double>();
        break;
      case ValueType::kBool:
        c->bools()[row] = in.Get<std::uint8_t>();
        break;
      case ValueType::kString: {
        const auto size = in.Get<std::uint32_t>();
        c->strings()[row] = StringRef::Of(arena.CopyString(in.Bytes(size)));
        break;
      }
    }
    c->set_valid(row);
  }
  RANKD_D_ASSERT(in.done());
}

// A row sink's decoded form (HashFieldsSink, FieldValuesSink): the tally of its last reply, then
// its row's values (none when the reply was not of the shape it expects).
bool EncodeRowForm(bool odd, const ReplyTally& tally, std::span<Column* const> columns,
                   std::size_t row, std::string* out) {
  if (odd) return false;
  out->clear();
  Put(out, &tally, sizeof tally);
  EncodeRow(columns, row, out);
  return true;
}

void ApplyRowForm(std::string_view decoded, ReplyTally* tally, DecodeCounts* counts,
                  std::span<Column* const> columns, std::size_t row, Arena& arena) {
  FormReader in(decoded);
  *tally = in.Get<ReplyTally>();
  AddTally(*tally, counts);
  ApplyRow(in, columns, row, arena);
}

}  // namespace

// ---- IdListSink ----

const redis::DecodedForm IdListSink::kDecodedForm{&IdListSink::Layout, &IdListSink::Encode,
                                                  &IdListSink::Apply};

std::uint64_t IdListSink::Layout(const void* sink) noexcept {
  static constexpr LayoutHash::Kind kKind = LayoutHash::KindHash("ids");
  LayoutHash h(kKind);
  h.Add(static_cast<std::uint64_t>(static_cast<const IdListSink*>(sink)->capacity_));
  return h.value();
}

// The tally, the count of ids kept, the ids.
bool IdListSink::Encode(const void* sink, std::string* out) {
  const auto* s = static_cast<const IdListSink*>(sink);
  if (s->odd_) return false;
  out->clear();
  Put(out, &s->tally_, sizeof s->tally_);
  const auto size = static_cast<std::uint32_t>(s->size_);
  Put(out, &size, sizeof size);
  Put(out, s->out_, s->size_ * sizeof(std::int64_t));
  return true;
}

void IdListSink::Apply(void* sink, std::string_view decoded) {
  auto* s = static_cast<IdListSink*>(sink);
  s->BeginReply();
  FormReader in(decoded);
  s->tally_ = in.Get<ReplyTally>();
  AddTally(s->tally_, s->counts_);
  const auto size = in.Get<std::uint32_t>();
  RANKD_D_ASSERT(size <= s->capacity_);
  s->size_ = size;
  std::memcpy(s->out_, in.Bytes(size * sizeof(std::int64_t)).data(), size * sizeof(std::int64_t));
  RANKD_D_ASSERT(in.done());
}

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
  ++tally_.dropped;
}

void IdListSink::Unexpected(std::string_view what) {
  odd_ = true;
  problem_->Set("expected a list of ids, the reply holds " + std::string(what));
}

void IdListSink::Push(std::int64_t id) {
  if (size_ < capacity_) out_[size_++] = id;
  ++counts_->values;
  ++tally_.values;
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
  tally_.reply_bytes += static_cast<std::uint32_t>(text.size());
  if (const std::optional<std::int64_t> id = ParseIntValue(text)) {
    Push(*id);
  } else {
    ++counts_->dropped;
    ++tally_.dropped;
  }
}

// ---- values into columns ----

bool StoreValue(std::string_view text, Column* column, std::size_t row, Arena& arena,
                DecodeCounts* counts) {
  counts->reply_bytes += text.size();
  ++counts->values;
  if (column->pending()) {
    // Lazy decoding: the text as it came, parsed (and counted if it does not parse) when read.
    column->raw()[row] = StringRef::Of(arena.CopyString(text));
    column->set_valid(row);
    return true;
  }
  // A string value is a copy in the node's arena (the reply's buffer goes after the call); other
  // values are read from the reply's text. Parsing is the column layer's (ParseInto).
  const std::string_view stable =
      column->type() == ValueType::kString && !text.empty() ? arena.CopyString(text) : text;
  if (ParseInto(stable, *column, row)) return true;
  ++counts->unparsable;
  column->set_null(row);
  return false;
}

// ---- HashFieldsSink ----

void HashFieldsSink::BeginReply() {
  if (replied_) {
    for (Column* column : columns_) column->set_null(row_);
    key_next_ = true;
    field_ = -1;
    tally_ = {};
  }
  replied_ = true;
}

const redis::DecodedForm HashFieldsSink::kDecodedForm{
    &HashFieldsSink::Layout, &HashFieldsSink::Encode, &HashFieldsSink::Apply};

std::uint64_t HashFieldsSink::Layout(const void* sink) noexcept {
  const auto* s = static_cast<const HashFieldsSink*>(sink);
  static constexpr LayoutHash::Kind kKind = LayoutHash::KindHash("hash fields");
  LayoutHash h(kKind);
  for (const std::string& field : s->fields_) h.Add(field);
  AddColumnTypes(h, s->columns_);
  return h.value();
}

// The tally, then the row's values in the order of the fields kept.
bool HashFieldsSink::Encode(const void* sink, std::string* out) {
  const auto* s = static_cast<const HashFieldsSink*>(sink);
  return EncodeRowForm(s->odd_, s->tally_, s->columns_, s->row_, out);
}

void HashFieldsSink::Apply(void* sink, std::string_view decoded) {
  auto* s = static_cast<HashFieldsSink*>(sink);
  s->BeginReply();
  ApplyRowForm(decoded, &s->tally_, s->counts_, s->columns_, s->row_, *s->arena_);
}

void HashFieldsSink::OnAggregateBegin(redis::Type type, std::size_t) {
  if (depth_ == 0) BeginReply();
  ++depth_;
  if (depth_ > 1) Unexpected("a nested aggregate");
  if (!IsArrayLike(type)) Unexpected(redis::TypeName(type));
}

void HashFieldsSink::Unexpected(std::string_view what) {
  odd_ = true;
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
  ++tally_.values;
  tally_.reply_bytes += static_cast<std::uint32_t>(text.size());
  if (!StoreValue(text, column, row_, *arena_, counts_)) ++tally_.unparsable;
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
    tally_ = {};
  }
  replied_ = true;
}

const redis::DecodedForm FieldValuesSink::kDecodedForm{
    &FieldValuesSink::Layout, &FieldValuesSink::Encode, &FieldValuesSink::Apply};

std::uint64_t FieldValuesSink::Layout(const void* sink) noexcept {
  static constexpr LayoutHash::Kind kKind = LayoutHash::KindHash("field values");
  LayoutHash h(kKind);  // the fields are the command's
  AddColumnTypes(h, static_cast<const FieldValuesSink*>(sink)->columns_);
  return h.value();
}

// The tally, then the row's values field by field.
bool FieldValuesSink::Encode(const void* sink, std::string* out) {
  const auto* s = static_cast<const FieldValuesSink*>(sink);
  return EncodeRowForm(s->odd_, s->tally_, s->columns_, s->row_, out);
}

void FieldValuesSink::Apply(void* sink, std::string_view decoded) {
  auto* s = static_cast<FieldValuesSink*>(sink);
  s->BeginReply();
  ApplyRowForm(decoded, &s->tally_, s->counts_, s->columns_, s->row_, *s->arena_);
}

void FieldValuesSink::OnAggregateBegin(redis::Type type, std::size_t values) {
  if (depth_ == 0) BeginReply();
  ++depth_;
  if (depth_ > 1) Unexpected("a nested aggregate");
  if (!IsArrayLike(type) || type == redis::Type::kMap) Unexpected(redis::TypeName(type));
  if (depth_ == 1 && values != columns_.size()) {
    odd_ = true;
    problem_->Set("expected " + std::to_string(columns_.size()) + " values, the reply holds " +
                  std::to_string(values));
  }
}

void FieldValuesSink::Unexpected(std::string_view what) {
  odd_ = true;
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
  ++tally_.values;
  tally_.reply_bytes += static_cast<std::uint32_t>(text.size());
  if (!StoreValue(text, column, row_, *arena_, counts_)) ++tally_.unparsable;
}

void FieldValuesSink::OnInteger(std::int64_t v) {
  char buf[32];
  Value(AsText(v, buf), false);
}

void FieldValuesSink::OnDouble(double v) {
  char buf[32];
  Value(AsText(v, buf), false);
}

void MembershipSink::OnAggregateBegin(redis::Type type, std::size_t n) {
  if (depth_ == 0) {
    // A reply begins: a second one replaces the first.
    replied_ = true;
    odd_ = false;
    got_ = 0;
  }
  ++depth_;
  if (depth_ > 1) {
    Unexpected("a nested aggregate");
  } else if (type != redis::Type::kArray) {
    Unexpected(redis::TypeName(type));
  } else if (n != expected_) {
    Unexpected(std::to_string(n) + " flags for " + std::to_string(expected_) + " ids");
  }
}

void MembershipSink::OnInteger(std::int64_t v) {
  if (depth_ != 1) {
    Unexpected("an integer");
  } else if (v != 0 && v != 1) {
    Unexpected("the integer " + std::to_string(v));
  } else if (got_ < expected_) {
    out_[got_++] = static_cast<std::uint8_t>(v);
  }
}

void MembershipSink::Unexpected(std::string_view what) {
  odd_ = true;
  problem_->Set("expected one 0 or 1 per id (SMISMEMBER), the reply holds " + std::string(what));
}

}  // namespace rankd::engine
