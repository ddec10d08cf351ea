// Replay: endpoints that answer a request's Redis commands from its capture instead of a server
// (docs/experiments.md, "Capture and replay").
//
// CapturedReplies holds one captured request's commands at a time. A batch is answered as the
// captured batch of the same commands on the same endpoint was (the next such batch in the order
// captured, then the last again), whole: the batch is the unit a connection's failure or a stall
// hits. A batch the capture does not hold (a plan that batches its reads otherwise) is answered
// command by command: each lookup of a command takes its next captured answer, then its last
// again (a plan sending a command more often than the captured one did reads the same answer).
// A set-membership command (SMISMEMBER key member...) the capture lacks as sent is answered from
// the captured answers about each of its members on that key: a changed plan asks about other
// rows, or in other chunks, than the captured one did (exclude_seen), yet about members the
// capture has answers for.
// A ReplayEndpoint answers as the server did: a reply is decoded into the command's sink from the
// captured bytes, an error reply is the command's error; a command whose call failed fails the
// batch the same way (its endpoint's command timeout, a lost connection) after the others are
// answered; one the request stopped waiting for is never answered, so the node's timeout or the
// deadline ends it again. A command the capture lacks is counted (missing()) and answered with an
// error reply naming it, so its node fails or degrades by its on_error.
//
// Thread affinity: the loop thread of the requests it answers (one request at a time).
// Ownership: CapturedReplies owns its copy of the commands; a ReplayEndpoint borrows its replies.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "rankd/engine/exec/request_capture.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/redis/reply_parser.h"

namespace rankd::engine::experiments {

class CapturedReplies {
 public:
  // Answers from `commands` from now on (the next request's), and forgets what was missing.
  void Load(std::vector<CapturedCommand> commands);
  // The captured answers to `batch`'s commands on `endpoint`, in its order; a null answer for a
  // command the capture lacks (counted in missing()).
  std::vector<const CapturedCommand*> Answers(std::string_view endpoint, const redis::Batch& batch);
  // The commands looked up since Load that the capture lacks (endpoint, encoded command).
  const std::vector<std::pair<std::string, std::string>>& missing() const noexcept {
    return missing_;
  }

 private:
  // Captured occurrences of one thing (a command, a batch), in captured order: the next to use.
  struct Occurrences {
    std::vector<std::size_t> at;  // indexes into commands_ (a batch: of its first command)
    std::size_t next = 0;
    std::size_t Take() { return at[std::min(next++, at.size() - 1)]; }
  };
  // A batch's identity: its endpoint, then its encoded commands one after the other.
  static std::string BatchKey(std::string_view endpoint, const redis::Batch& batch);
  // SMISMEMBER `command` answered from members_ (a reply made here), or null when it is not one
  // or a member has no captured answer.
  const CapturedCommand* AnswerByMembers(std::string_view endpoint, std::string_view command);

  std::vector<CapturedCommand> commands_;
  std::map<std::pair<std::string, std::string>, Occurrences, std::less<>> by_command_;
  std::map<std::string, Occurrences, std::less<>> by_batch_;
  // Captured SMISMEMBER answers by (endpoint, key, member): 0 or 1.
  std::map<std::tuple<std::string, std::string, std::string>, char, std::less<>> members_;
  std::deque<CapturedCommand> made_;  // replies AnswerByMembers made (stable addresses)
  std::vector<std::pair<std::string, std::string>> missing_;
};

class ReplayEndpoint final : public Endpoint {
 public:
  ReplayEndpoint(std::string name, CapturedReplies& replies);
  rt::Task<void> Start(rt::Duration timeout) override;
  rt::Task<void> Execute(redis::Batch& batch) override;
  bool reachable() const override { return true; }
  bool ready() const override { return true; }
  std::size_t in_flight() const override { return 0; }
  std::int64_t oldest_due_ns() const override { return 0; }

 private:
  CapturedReplies& replies_;
  redis::ReplyParser parser_;
};

}  // namespace rankd::engine::experiments
