// Reading the ranked list of a /rank response's output (experiments/response_ranking.h).
#include "rankd/engine/experiments/response_ranking.h"

#include "json/parser.h"
#include "json/value.h"
#include "rankd/engine/json/json_text.h"

namespace rankd::engine::experiments {
namespace {

// The names of an object's members, quoted and separated by ", ".
std::string MemberNames(const json::Value& object) {
  std::string names;
  for (const json::Member& member : object.object()) {
    if (!names.empty()) names.append(", ");
    names.append(json::QuoteJson(member.name));
  }
  return names.empty() ? "none" : names;
}

std::string TypeOf(const json::Value& value) {
  return std::string(json::Value::TypeName(value.type()));
}

}  // namespace

std::expected<std::vector<RankedItem>, std::string> RankedListOfResponse(
    std::string_view response_json, std::string_view output, std::string_view score_key) {
  const auto response = json::Parse(response_json);
  if (!response) return std::unexpected("the response is not JSON: " + response.error().message);
  if (!response->is_object()) {
    return std::unexpected("the response is a JSON " + TypeOf(*response) + ", not an object");
  }
  if (const json::Value* error = response->Find("error"); error != nullptr) {
    const json::Value* code = error->Find("code");
    const json::Value* message = error->Find("message");
    return std::unexpected(
        "the response is an error: " +
        (code != nullptr && code->is_string() ? code->string() : std::string("?")) + ": " +
        (message != nullptr && message->is_string() ? message->string() : std::string()));
  }
  const json::Value* outputs = response->Find("outputs");
  if (outputs == nullptr || !outputs->is_object()) {
    return std::unexpected("the response has no \"outputs\" object");
  }
  const json::Value* rows = nullptr;
  std::string name(output);
  if (output.empty()) {
    if (outputs->object().size() != 1) {
      return std::unexpected("the response has " + std::to_string(outputs->object().size()) +
                             " outputs (" + MemberNames(*outputs) + "): name one");
    }
    name = outputs->object().front().name;
    rows = &outputs->object().front().value;
  } else {
    rows = outputs->Find(output);
    if (rows == nullptr) {
      return std::unexpected("the response has no output " + json::QuoteJson(output) +
                             " (outputs: " + MemberNames(*outputs) + ")");
    }
  }
  const std::string where = "output " + json::QuoteJson(name);
  if (!rows->is_array()) {
    return std::unexpected(where + " is a JSON " + TypeOf(*rows) + ", not an array of rows");
  }
  std::vector<RankedItem> list;
  list.reserve(rows->array().size());
  for (std::size_t i = 0; i < rows->array().size(); ++i) {
    const json::Value& row = rows->array()[i];
    const std::string at = where + " row " + std::to_string(i + 1);
    if (!row.is_object())
      return std::unexpected(at + " is a JSON " + TypeOf(row) + ", not an object");
    const json::Value* id = row.Find("id");
    if (id == nullptr) return std::unexpected(at + " has no \"id\"");
    if (!id->exact_integer()) {
      return std::unexpected(at + ": \"id\" is " +
                             (id->is_number() ? std::string("not an integer within int64")
                                              : "a " + TypeOf(*id) + ", not an integer"));
    }
    RankedItem item{*id->exact_integer(), std::nullopt};
    if (!score_key.empty()) {
      const json::Value* score = row.Find(score_key);
      if (score != nullptr && score->is_number()) {
        item.score = score->number();
      } else if (score != nullptr && !score->is_null()) {
        return std::unexpected(at + ": " + json::QuoteJson(score_key) + " is a " + TypeOf(*score) +
                               ", not a number");
      }
    }
    list.push_back(item);
  }
  return list;
}

}  // namespace rankd::engine::experiments
