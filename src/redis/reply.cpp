// Reply tree: the builder sink, equality and a readable rendering.
#include "rankd/redis/reply.h"

#include <charconv>
#include <cmath>

namespace rankd::redis {

const Reply* Reply::Find(std::string_view key) const {
  if (type != Type::kMap) return nullptr;
  for (std::size_t i = 0; i + 1 < elements.size(); i += 2) {
    if (elements[i].str == key) return &elements[i + 1];
  }
  return nullptr;
}

bool Reply::SameAttributes(const Reply& other) const {
  return attributes == other.attributes && AttributeMaps() == other.AttributeMaps();
}

bool Reply::operator==(const Reply& other) const {
  if (type != other.type) return false;
  switch (type) {
    case Type::kInteger:
      return integer == other.integer && SameAttributes(other);
    case Type::kDouble:
      if (std::isnan(number) || std::isnan(other.number)) {
        return std::isnan(number) && std::isnan(other.number) && SameAttributes(other);
      }
      return number == other.number && SameAttributes(other);
    case Type::kBoolean:
      return boolean == other.boolean && SameAttributes(other);
    case Type::kNull:
      return SameAttributes(other);
    default:
      return str == other.str && format == other.format && elements == other.elements &&
             SameAttributes(other);
  }
}

namespace {

void AppendEscaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
}

void Render(const Reply& r, std::string& out) {
  std::size_t first = 0;
  for (const std::size_t entries : r.AttributeMaps()) {
    out += "|attributes ";
    const auto begin = r.attributes.begin() + static_cast<std::ptrdiff_t>(first);
    Render(Reply::Aggregate(Type::kMap, std::vector<Reply>(
                                            begin, begin + static_cast<std::ptrdiff_t>(2 * entries))),
           out);
    out += "| ";
    first += 2 * entries;
  }
  switch (r.type) {
    case Type::kSimpleString:
      out += "simple ";
      AppendEscaped(out, r.str);
      return;
    case Type::kError:
      out += "error ";
      AppendEscaped(out, r.str);
      return;
    case Type::kInteger:
      out += "int " + std::to_string(r.integer);
      return;
    case Type::kBulkString:
      out += "bulk ";
      AppendEscaped(out, r.str);
      return;
    case Type::kNull:
      out += "null";
      return;
    case Type::kDouble: {
      char digits[32];
      char* end = std::to_chars(digits, digits + sizeof(digits), r.number).ptr;
      out += "double ";
      out.append(digits, end);
      return;
    }
    case Type::kBoolean:
      out += r.boolean ? "true" : "false";
      return;
    case Type::kBigNumber:
      out += "bignum " + r.str;
      return;
    case Type::kVerbatim:
      out += "verbatim " + r.format + ":";
      AppendEscaped(out, r.str);
      return;
    case Type::kArray:
    case Type::kSet:
    case Type::kPush:
    case Type::kMap:
    case Type::kAttribute: {
      const bool pairs = r.type == Type::kMap || r.type == Type::kAttribute;
      out += r.type == Type::kSet ? "~[" : r.type == Type::kPush ? ">[" : pairs ? "{" : "[";
      for (std::size_t i = 0; i < r.elements.size(); ++i) {
        if (i != 0) out += (pairs && i % 2 == 1) ? ": " : ", ";
        Render(r.elements[i], out);
      }
      out += pairs ? "}" : "]";
      return;
    }
  }
}

}  // namespace

std::string Reply::DebugString() const {
  std::string out;
  Render(*this, out);
  return out;
}

void ReplyBuilder::OnVerbatim(std::string_view format, std::string_view text) {
  Reply r = Reply::Text(Type::kVerbatim, text);
  r.format = format;
  Add(std::move(r));
}

void ReplyBuilder::OnDouble(double v) {
  Reply r;
  r.type = Type::kDouble;
  r.number = v;
  Add(std::move(r));
}

void ReplyBuilder::OnBoolean(bool v) {
  Reply r;
  r.type = Type::kBoolean;
  r.boolean = v;
  Add(std::move(r));
}

void ReplyBuilder::OnAggregateBegin(Type type, std::size_t values) {
  Reply r;
  r.type = type;
  r.elements.reserve(values);  // bounded: the parser has already seen every one of them
  // An aggregate is the value a pending attribute describes (its own children come later). An
  // attribute right after an attribute describes the same value: it holds the pending maps while
  // it is read, so that no value inside it takes them.
  if (pending_attribute_) {
    TakePendingAttributes(r);
  }
  open_.push_back(std::move(r));
}

void ReplyBuilder::OnAggregateEnd(Type) {
  Reply r = std::move(open_.back());
  open_.pop_back();
  if (r.type == Type::kAttribute) {
    // The maps before it (held while it was read), then its own, describe the next value.
    Reply pending;
    pending.type = Type::kAttribute;
    pending.attribute_maps = r.AttributeMaps();
    pending.attribute_maps.push_back(r.elements.size() / 2);
    pending.elements = std::move(r.attributes);
    for (Reply& e : r.elements) pending.elements.push_back(std::move(e));
    pending_attribute_ = std::move(pending);
    return;
  }
  Add(std::move(r), /*is_aggregate_end=*/true);
}

void ReplyBuilder::TakePendingAttributes(Reply& value) {
  value.attributes = std::move(pending_attribute_->elements);
  value.attribute_maps = std::move(pending_attribute_->attribute_maps);
  if (value.attribute_maps.size() == 1) value.attribute_maps.clear();  // one map: the default
  pending_attribute_.reset();
}

void ReplyBuilder::Add(Reply value, bool is_aggregate_end) {
  if (!is_aggregate_end && pending_attribute_) TakePendingAttributes(value);
  if (open_.empty()) {
    root_ = std::move(value);
    done_ = true;
  } else {
    open_.back().elements.push_back(std::move(value));
  }
}

}  // namespace rankd::redis
