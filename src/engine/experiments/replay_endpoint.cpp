#include "rankd/engine/experiments/replay_endpoint.h"

#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/experiments/capture_file.h"
#include "rankd/redis/client_errors.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/sleep.h"
#include "sources/reply_sinks.h"

namespace rankd::engine::experiments {
namespace {

// The flags of a SMISMEMBER reply to `members` ids (exclude_seen's sink decides what one is), or
// nullopt.
std::optional<std::vector<std::uint8_t>> MemberFlags(std::string_view reply, std::size_t members) {
  std::vector<std::uint8_t> flags(members);
  ReplyProblem problem;
  MembershipSink sink(flags.data(), members, &problem);
  redis::ReplyParser parser;
  std::size_t consumed = 0;
  if (parser.Parse(reply, sink, &consumed) != redis::ParseStatus::kComplete ||
      consumed != reply.size() || !sink.complete()) {
    return std::nullopt;
  }
  return flags;
}

bool IsSmismember(std::string_view name) {
  constexpr std::string_view kName = "SMISMEMBER";
  if (name.size() != kName.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(name[i])) != kName[i]) return false;
  }
  return true;
}

}  // namespace

std::string CapturedReplies::BatchKey(std::string_view endpoint, const redis::Batch& batch) {
  std::string key(endpoint);
  key += '\n';
  for (std::size_t i = 0; i < batch.size(); ++i) key += batch.command(i);
  return key;
}

void CapturedReplies::Load(std::vector<CapturedCommand> commands) {
  commands_ = std::move(commands);
  by_command_.clear();
  by_batch_.clear();
  missing_.clear();
  for (std::size_t i = 0; i < commands_.size();) {
    const CapturedCommand& first = commands_[i];
    std::string key = first.endpoint + '\n';
    std::size_t end = i;
    for (; end < commands_.size() && commands_[end].batch == first.batch &&
           commands_[end].endpoint == first.endpoint;
         ++end) {
      key += commands_[end].command;
      by_command_[{commands_[end].endpoint, commands_[end].command}].at.push_back(end);
    }
    by_batch_[std::move(key)].at.push_back(i);
    i = end;
  }
  members_.clear();
  made_.clear();
  for (const CapturedCommand& c : commands_) {
    if (c.outcome != CapturedOutcome::kReply) continue;
    const std::optional<std::vector<std::string_view>> args = CommandArguments(c.command);
    if (!args || args->size() < 3 || !IsSmismember((*args)[0])) continue;
    const std::optional<std::vector<std::uint8_t>> flags = MemberFlags(c.reply, args->size() - 2);
    if (!flags) continue;
    for (std::size_t m = 2; m < args->size(); ++m) {
      members_[{c.endpoint, std::string((*args)[1]), std::string((*args)[m])}] = (*flags)[m - 2];
    }
  }
}

const CapturedCommand* CapturedReplies::AnswerByMembers(std::string_view endpoint,
                                                        std::string_view command) {
  const std::optional<std::vector<std::string_view>> args = CommandArguments(command);
  if (!args || args->size() < 3 || !IsSmismember((*args)[0])) return nullptr;
  CapturedCommand made;
  made.endpoint = endpoint;
  made.command = command;
  made.reply = "*" + std::to_string(args->size() - 2) + "\r\n";
  for (std::size_t m = 2; m < args->size(); ++m) {
    const auto it = members_.find(
        std::tuple<std::string, std::string, std::string>{endpoint, (*args)[1], (*args)[m]});
    if (it == members_.end()) return nullptr;
    made.reply += it->second != 0 ? ":1\r\n" : ":0\r\n";
  }
  return &made_.emplace_back(std::move(made));
}

std::vector<const CapturedCommand*> CapturedReplies::Answers(std::string_view endpoint,
                                                             const redis::Batch& batch) {
  std::vector<const CapturedCommand*> answers(batch.size(), nullptr);
  if (const auto it = by_batch_.find(BatchKey(endpoint, batch)); it != by_batch_.end()) {
    const std::size_t first = it->second.Take();
    for (std::size_t i = 0; i < batch.size(); ++i) answers[i] = &commands_[first + i];
    return answers;
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto it =
        by_command_.find(std::pair{std::string(endpoint), std::string(batch.command(i))});
    if (it != by_command_.end()) {
      answers[i] = &commands_[it->second.Take()];
    } else if (const CapturedCommand* made = AnswerByMembers(endpoint, batch.command(i))) {
      answers[i] = made;
    } else {
      missing_.emplace_back(endpoint, batch.command(i));
    }
  }
  return answers;
}

ReplayEndpoint::ReplayEndpoint(std::string name, CapturedReplies& replies)
    : Endpoint(std::move(name)), replies_(replies) {}

rt::Task<void> ReplayEndpoint::Start(rt::Duration) { co_return; }

rt::Task<void> ReplayEndpoint::Execute(redis::Batch& batch) {
  batch.ResetErrors();
  batch.add_round_trips(1);
  std::optional<CapturedOutcome> failure;
  const std::vector<const CapturedCommand*> answers = replies_.Answers(name(), batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const CapturedCommand* c = answers[i];
    if (c == nullptr) {
      batch.set_error(i, "ERR the capture has no reply to this command");
      continue;
    }
    switch (c->outcome) {
      case CapturedOutcome::kReply: {
        parser_.Reset();
        std::size_t consumed = 0;
        const redis::detail::ReplyTarget target = batch.target(i);
        const redis::ParseStatus status = target.parse(parser_, c->reply, target.sink, &consumed);
        if (status != redis::ParseStatus::kComplete || consumed != c->reply.size()) {
          batch.set_error(i, "ERR the capture's reply to this command is not one RESP reply");
        }
        break;
      }
      case CapturedOutcome::kErrorReply:
        batch.set_error(i, c->reply);
        break;
      case CapturedOutcome::kCommandTimeout:
      case CapturedOutcome::kConnectionLost:
      case CapturedOutcome::kUnanswered:
        // The worst of the batch's failures wins: unanswered (waits), then the others in order.
        if (!failure || c->outcome == CapturedOutcome::kUnanswered) failure = c->outcome;
        break;
    }
  }
  if (!failure) co_return;
  switch (*failure) {
    case CapturedOutcome::kCommandTimeout:
      throw rt::DeadlineExceeded();
    case CapturedOutcome::kConnectionLost:
      throw redis::ConnectionError("replayed endpoint " + name() + " lost its connection",
                                   "lost its connection");
    default:
      // Never answered: the node's timeout or the request's deadline cancels the wait.
      co_await rt::SleepFor(std::chrono::hours(24));
      throw rt::DeadlineExceeded();
  }
}

}  // namespace rankd::engine::experiments
