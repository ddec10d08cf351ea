#include "memory_endpoint.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <stdexcept>

#include "rankd/redis/client_errors.h"
#include "rankd/redis/reply_parser.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/sleep.h"

namespace rankd::engine::testing {
namespace {

constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

// A stalled command waits this long unless cancelled: far past any request's deadline.
constexpr auto kStallFor = std::chrono::hours(1);

void AppendBulk(std::string& out, std::string_view text) {
  out += '$';
  out += std::to_string(text.size());
  out += "\r\n";
  out += text;
  out += "\r\n";
}

void AppendArrayHeader(std::string& out, std::size_t n) {
  out += '*';
  out += std::to_string(n);
  out += "\r\n";
}

std::int64_t ParseIndex(const std::string& text) {
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    throw std::logic_error("LRANGE index is not an integer: " + text);
  }
  return v;
}

// The wrong-shape reply to a command that wants an array of `elements` values.
std::string WrongShapeReply(WrongShape shape, std::size_t elements) {
  switch (shape) {
    case WrongShape::kInteger:
      return ":7\r\n";
    case WrongShape::kBulkString:
      return "$2\r\nok\r\n";
    case WrongShape::kNestedArray: {
      std::string out;
      AppendArrayHeader(out, std::max<std::size_t>(elements, 1));
      out += "*0\r\n";
      for (std::size_t i = 1; i < elements; ++i) out += "$-1\r\n";
      return out;
    }
  }
  throw std::logic_error("unknown wrong shape");
}

class InFlight {
 public:
  explicit InFlight(std::size_t* count) : count_(count) { ++*count_; }
  ~InFlight() { --*count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::size_t* count_;
};

}  // namespace

std::vector<std::string> DecodeCommand(std::string_view encoded) {
  std::vector<std::string> args;
  std::size_t at = 0;
  const auto line = [&]() {
    const std::size_t end = encoded.find("\r\n", at);
    if (end == std::string_view::npos) throw std::logic_error("command: no CRLF");
    const std::string_view text = encoded.substr(at, end - at);
    at = end + 2;
    return text;
  };
  const auto number = [](std::string_view text) {
    std::size_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
      throw std::logic_error("command: bad length");
    }
    return v;
  };
  const std::string_view header = line();
  if (header.empty() || header[0] != '*') throw std::logic_error("command: not an array");
  const std::size_t n = number(header.substr(1));
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view len = line();
    if (len.empty() || len[0] != '$') throw std::logic_error("command: not a bulk string");
    const std::size_t size = number(len.substr(1));
    if (at + size + 2 > encoded.size()) throw std::logic_error("command: truncated");
    args.emplace_back(encoded.substr(at, size));
    at += size + 2;
  }
  if (at != encoded.size()) throw std::logic_error("command: trailing bytes");
  return args;
}

std::string ReplyBytes(MemoryStore& store, const std::vector<std::string>& command) {
  if (command.size() < 2) throw std::logic_error("command without a key");
  const std::string& name = command[0];
  const StoredKey* key = store.Find(command[1]);
  if (name == "PTTL") {  // a feature cache asks each missed key's expiry; stored keys have none
    if (key == nullptr) return ":-2\r\n";
    if (key->kind == StoredKey::Kind::kFault && key->fault == KeyFault::kErrorReply) {
      return "-" + key->error + "\r\n";
    }
    return ":-1\r\n";
  }
  const StoredKey::Kind wants = name == "LRANGE"       ? StoredKey::Kind::kList
                                : name == "SMISMEMBER" ? StoredKey::Kind::kSet
                                                       : StoredKey::Kind::kHash;
  if (wants == StoredKey::Kind::kHash && name != "HGETALL" && name != "HMGET") {
    throw std::logic_error("MemoryEndpoint does not know " + name);
  }
  // The values of an array reply as wide as the command's arguments after the key.
  const std::size_t hmget_fields = name == "HMGET" || name == "SMISMEMBER" ? command.size() - 2 : 0;
  std::string out;
  if (key != nullptr && key->kind == StoredKey::Kind::kFault) {
    if (key->fault == KeyFault::kErrorReply) return "-" + key->error + "\r\n";
    if (key->fault == KeyFault::kWrongShape) return WrongShapeReply(key->shape, hmget_fields);
    throw std::logic_error("a stalled or lost command has no reply");
  }
  if (key != nullptr && key->kind != wants) return "-" + std::string(kWrongType) + "\r\n";
  if (name == "SMISMEMBER") {
    if (command.size() < 3) throw std::logic_error("SMISMEMBER takes key member [member ...]");
    AppendArrayHeader(out, command.size() - 2);
    for (std::size_t i = 2; i < command.size(); ++i) {
      out += key != nullptr && key->HasMember(command[i]) ? ":1\r\n" : ":0\r\n";
    }
    return out;
  }
  if (name == "LRANGE") {
    if (command.size() != 4) throw std::logic_error("LRANGE takes key start stop");
    const std::int64_t size = key == nullptr ? 0 : static_cast<std::int64_t>(key->elements.size());
    std::int64_t start = ParseIndex(command[2]);
    std::int64_t stop = ParseIndex(command[3]);
    if (start < 0) start = std::max<std::int64_t>(size + start, 0);
    if (stop < 0) stop += size;
    stop = std::min(stop, size - 1);
    if (start > stop) {
      AppendArrayHeader(out, 0);
      return out;
    }
    AppendArrayHeader(out, static_cast<std::size_t>(stop - start + 1));
    for (std::int64_t i = start; i <= stop; ++i) {
      AppendBulk(out, key->elements[static_cast<std::size_t>(i)]);
    }
    return out;
  }
  if (name == "HGETALL") {
    if (key == nullptr) {
      AppendArrayHeader(out, 0);
      return out;
    }
    AppendArrayHeader(out, key->fields.size() * 2);
    for (const auto& [field, value] : key->fields) {
      AppendBulk(out, field);
      AppendBulk(out, value);
    }
    return out;
  }
  AppendArrayHeader(out, hmget_fields);
  for (std::size_t i = 2; i < command.size(); ++i) {
    const std::pair<std::string, std::string>* found = nullptr;
    if (key != nullptr) {
      for (const auto& f : key->fields) {
        if (f.first == command[i]) found = &f;
      }
    }
    if (found == nullptr) {
      out += "$-1\r\n";
    } else {
      AppendBulk(out, found->second);
    }
  }
  return out;
}

EndpointSet MemoryEndpoints(const Registry& registry, MemoryStore* store) {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  for (const EndpointDef& def : registry.endpoints()) {
    endpoints.push_back(std::make_unique<MemoryEndpoint>(def.name, store));
  }
  return EndpointSet(std::move(endpoints));
}

rt::Task<void> MemoryEndpoint::Start(rt::Duration) { co_return; }

rt::Task<void> MemoryEndpoint::ApplyFaults(redis::Batch& batch) {
  bool stall = false;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const StoredKey* key = store_->Find(DecodeCommand(batch.command(i)).at(1));
    if (key == nullptr || key->kind != StoredKey::Kind::kFault) continue;
    if (key->fault == KeyFault::kConnectionLost) {
      throw redis::ConnectionError("memory endpoint " + name() + ": connection lost (injected)");
    }
    if (key->fault == KeyFault::kStall) stall = true;
  }
  if (stall) co_await rt::SleepFor(kStallFor);  // ends only by cancellation (CancelledError)
}

void MemoryEndpoint::Reply(redis::Batch& batch, std::size_t i) {
  ++commands_;
  const std::string bytes = ReplyBytes(*store_, DecodeCommand(batch.command(i)));
  if (bytes[0] == '-') {  // an error reply never reaches the sink
    batch.set_error(i, bytes.substr(1, bytes.size() - 3));
    return;
  }
  redis::ReplyParser parser;
  std::size_t consumed = 0;
  const redis::detail::ReplyTarget target = batch.target(i);
  const redis::ParseStatus status = target.parse(parser, bytes, target.sink, &consumed);
  if (status != redis::ParseStatus::kComplete || consumed != bytes.size()) {
    throw std::logic_error("memory endpoint built a reply its parser does not take: " + bytes);
  }
}

rt::Task<void> MemoryEndpoint::Execute(redis::Batch& batch) {
  if (batch.empty()) co_return;
  batch.add_round_trips(1);
  const InFlight in_flight(&in_flight_);
  struct Started {  // in started_ while the batch is executed
    std::multiset<std::int64_t>* set;
    std::multiset<std::int64_t>::iterator at;
    ~Started() { set->erase(at); }
  } const started{&started_, started_.insert(rt::MonotonicNanos())};
  co_await rt::Yield();
  co_await ApplyFaults(batch);
  batch.ResetErrors();
  for (std::size_t i = 0; i < batch.size(); ++i) Reply(batch, i);
}

}  // namespace rankd::engine::testing
