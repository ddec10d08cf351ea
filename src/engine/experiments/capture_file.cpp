#include "rankd/engine/experiments/capture_file.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

#include "json/parser.h"
#include "rankd/engine/json/json_text.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/engine/values/value_parsers.h"

namespace rankd::engine::experiments {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void AppendEncodedCommand(std::string& out, const std::vector<std::string>& args) {
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (const std::string& a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
}

// `bytes` as the member `name` when they are UTF-8 (a JSON string carries them exactly), else
// as `name`_base64.
void WriteBytesMember(json::JsonWriter& w, std::string_view name, std::string_view bytes) {
  if (IsValidUtf8(bytes)) {
    w.Member(name, bytes);
    return;
  }
  std::string base64;
  AppendBase64(base64, bytes);
  w.Member(std::string(name) + "_base64", base64);
}

std::expected<CapturedOutcome, std::string> OutcomeNamed(std::string_view name) {
  for (CapturedOutcome o :
       {CapturedOutcome::kReply, CapturedOutcome::kErrorReply, CapturedOutcome::kCommandTimeout,
        CapturedOutcome::kConnectionLost, CapturedOutcome::kUnanswered}) {
    if (CapturedOutcomeName(o) == name) return o;
  }
  return std::unexpected("outcome must be reply, error, timeout, connection or unanswered, not " +
                         json::QuoteJson(name));
}

// The string member `name` of `object`, or that of `name`_base64 decoded; `required` makes its
// absence an error, else absent is empty.
std::expected<std::string, std::string> BytesMember(const json::Value& object,
                                                    const std::string& name, bool required) {
  if (const json::Value* v = object.Find(name)) {
    if (!v->is_string()) return std::unexpected(name + " must be a string");
    return v->string();
  }
  if (const json::Value* v = object.Find(name + "_base64")) {
    if (!v->is_string()) return std::unexpected(name + "_base64 must be a string");
    auto bytes = DecodeBase64(v->string());
    if (!bytes) return std::unexpected(name + "_base64: " + bytes.error());
    return std::move(*bytes);
  }
  if (required) return std::unexpected("missing " + name);
  return std::string();
}

std::expected<CapturedCommand, std::string> ParseCommand(const json::Value& v) {
  if (!v.is_object()) return std::unexpected("must be an object");
  CapturedCommand c;
  const std::optional<std::int64_t> batch = v.FindSafeInteger("batch");
  if (!batch || *batch < 0 || *batch > 0xffffffff) {
    return std::unexpected("batch must be an integer from 0 to 4294967295");
  }
  c.batch = static_cast<std::uint32_t>(*batch);
  const json::Value* endpoint = v.Find("endpoint");
  if (endpoint == nullptr || !endpoint->is_string()) {
    return std::unexpected("endpoint must be a string");
  }
  c.endpoint = endpoint->string();
  if (const json::Value* args = v.Find("command")) {
    if (!args->is_array() || args->array().empty()) {
      return std::unexpected("command must be a non-empty array of strings");
    }
    std::vector<std::string> strings;
    for (const json::Value& a : args->array()) {
      if (!a.is_string()) return std::unexpected("command must be a non-empty array of strings");
      strings.push_back(a.string());
    }
    AppendEncodedCommand(c.command, strings);
  } else {
    auto encoded = BytesMember(v, "command", true);
    if (!encoded) return std::unexpected(encoded.error());
    if (!CommandArguments(*encoded)) {
      return std::unexpected("command_base64 is not a RESP array of bulk strings");
    }
    c.command = std::move(*encoded);
  }
  const json::Value* outcome = v.Find("outcome");
  if (outcome == nullptr || !outcome->is_string()) {
    return std::unexpected("outcome must be a string");
  }
  auto o = OutcomeNamed(outcome->string());
  if (!o) return std::unexpected(o.error());
  c.outcome = *o;
  const bool has_reply =
      c.outcome == CapturedOutcome::kReply || c.outcome == CapturedOutcome::kErrorReply;
  auto reply = BytesMember(v, "reply", has_reply);
  if (!reply) return std::unexpected(reply.error());
  c.reply = std::move(*reply);
  return c;
}

}  // namespace

std::optional<std::vector<std::string_view>> CommandArguments(std::string_view encoded) {
  auto read_count = [&encoded](char tag) -> std::optional<std::size_t> {
    if (encoded.empty() || encoded.front() != tag) return std::nullopt;
    const std::size_t end = encoded.find("\r\n");
    if (end == std::string_view::npos) return std::nullopt;
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(encoded.data() + 1, encoded.data() + end, n);
    if (ec != std::errc() || ptr != encoded.data() + end || end == 1) return std::nullopt;
    encoded.remove_prefix(end + 2);
    return n;
  };
  const std::optional<std::size_t> argc = read_count('*');
  if (!argc || *argc == 0 || *argc > encoded.size()) return std::nullopt;
  std::vector<std::string_view> args;
  args.reserve(*argc);
  for (std::size_t i = 0; i < *argc; ++i) {
    const std::optional<std::size_t> size = read_count('$');
    if (!size || *size > encoded.size() || encoded.size() - *size < 2 ||
        encoded.substr(*size, 2) != "\r\n") {
      return std::nullopt;
    }
    args.push_back(encoded.substr(0, *size));
    encoded.remove_prefix(*size + 2);
  }
  if (!encoded.empty()) return std::nullopt;
  return args;
}

void AppendBase64(std::string& out, std::string_view bytes) {
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                            (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                            std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    std::uint32_t n = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (left == 2) n |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += left == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
}

std::expected<std::string, std::string> DecodeBase64(std::string_view text) {
  if (text.size() % 4 != 0)
    return std::unexpected("base64 text must have a multiple of 4 characters");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t n = 0;
    int padding = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char ch = text[i + k];
      std::uint32_t value = 0;
      if (ch == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++padding;
      } else if (const std::size_t at = kAlphabet.find(ch);
                 at != std::string_view::npos && padding == 0) {
        value = static_cast<std::uint32_t>(at);
      } else {
        return std::unexpected("not base64 at character " + std::to_string(i + k + 1));
      }
      n = (n << 6) | value;
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (padding < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (padding < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

void AppendCaptureLine(std::string& out, const CaptureRecord& record) {
  json::JsonWriter w(out);
  w.BeginObject().Key("rankd_capture").Int(kCaptureFormatVersion);
  WriteBytesMember(w, "request", record.request);
  w.Member("request_id", record.request_id).Member("plan", record.plan);
  w.Member("plan_digest", record.plan_digest);
  WriteBytesMember(w, "response", record.response);
  w.Key("commands").BeginArray();
  for (const CapturedCommand& c : record.commands) {
    w.BeginObject().Key("batch").Uint(c.batch).Member("endpoint", c.endpoint);
    const std::optional<std::vector<std::string_view>> args = CommandArguments(c.command);
    bool readable = args.has_value();
    if (readable) {
      for (std::string_view a : *args) readable = readable && IsValidUtf8(a);
    }
    if (readable) {
      w.Key("command").BeginArray();
      for (const std::string_view a : *args) w.String(a);
      w.EndArray();
    } else {
      std::string base64;
      AppendBase64(base64, c.command);
      w.Member("command_base64", base64);
    }
    w.Member("outcome", CapturedOutcomeName(c.outcome));
    if (c.outcome == CapturedOutcome::kReply || c.outcome == CapturedOutcome::kErrorReply) {
      WriteBytesMember(w, "reply", c.reply);
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
  out += '\n';
}

std::expected<CaptureRecord, std::string> ParseCaptureLine(std::string_view line) {
  auto parsed = json::Parse(line);
  if (!parsed) return std::unexpected("not JSON: " + parsed.error().message);
  const json::Value& v = *parsed;
  if (!v.is_object()) return std::unexpected("a capture line must be a JSON object");
  const json::Value* version = v.Find("rankd_capture");
  if (version == nullptr || !version->is_number() || version->number() != kCaptureFormatVersion) {
    return std::unexpected("rankd_capture must be " + std::to_string(kCaptureFormatVersion) +
                           " (the capture format's version)");
  }
  CaptureRecord record;
  auto request = BytesMember(v, "request", true);
  if (!request) return std::unexpected(request.error());
  record.request = std::move(*request);
  auto response = BytesMember(v, "response", true);
  if (!response) return std::unexpected(response.error());
  record.response = std::move(*response);
  for (auto [name, field] :
       {std::pair{"request_id", &record.request_id}, std::pair{"plan", &record.plan},
        std::pair{"plan_digest", &record.plan_digest}}) {
    const json::Value* s = v.Find(name);
    if (s == nullptr || !s->is_string())
      return std::unexpected(std::string(name) + " must be a string");
    *field = s->string();
  }
  const json::Value* commands = v.Find("commands");
  if (commands == nullptr || !commands->is_array()) {
    return std::unexpected("commands must be an array");
  }
  for (std::size_t i = 0; i < commands->array().size(); ++i) {
    auto c = ParseCommand(commands->array()[i]);
    if (!c) return std::unexpected("commands[" + std::to_string(i) + "]: " + c.error());
    record.commands.push_back(std::move(*c));
  }
  return record;
}

}  // namespace rankd::engine::experiments
