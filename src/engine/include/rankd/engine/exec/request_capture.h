// RequestCapture: every Redis command one request's nodes sent and what came of it, in the order
// the answers arrived, for capture and replay (docs/experiments.md, "Capture and replay").
//
// A request executed with ExecuteOptions::capture set records each command of every batch its
// nodes send (through a CapturingEndpoint: exec/capturing_endpoint.h), numbered by batch: the
// reply's RESP bytes as its sink decoded them (a feature cache's stored reply included), the
// server's error reply, or, when the batch's call failed as a whole, how it failed. A replay
// answers the same commands from the record (experiments/replay_endpoint.h), so the request decodes
// the same bytes into the same columns.
//
// Thread affinity: the request's loop thread (nodes that send commands run there). Ownership:
// owns its records.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::engine {

// How one captured command ended.
enum class CapturedOutcome : std::uint8_t {
  kReply,           // `reply` holds the reply's RESP bytes
  kErrorReply,      // `reply` holds the server's error reply (without the leading '-')
  kCommandTimeout,  // the call passed its endpoint's command timeout before this reply came
  kConnectionLost,  // the call's connection failed (or a reply was malformed) before it came
  kUnanswered,      // the request stopped waiting first (the node's timeout, the deadline)
};

// The wire name of an outcome in a capture file: "reply", "error", "timeout", "connection",
// "unanswered".
std::string_view CapturedOutcomeName(CapturedOutcome outcome) noexcept;

struct CapturedCommand {
  std::uint32_t batch = 0;  // the request's batches are numbered from 0 in the order they ended
  std::string endpoint;     // the registry's endpoint name
  std::string command;      // the command as sent: its RESP encoding (an array of bulk strings)
  CapturedOutcome outcome = CapturedOutcome::kReply;
  std::string reply;  // the RESP bytes (kReply), the error message (kErrorReply), else empty
};

class RequestCapture {
 public:
  // The number of the next batch to record (each batch's commands are added together).
  std::uint32_t NextBatch() noexcept { return batches_++; }
  void Add(CapturedCommand command) { commands_.push_back(std::move(command)); }
  const std::vector<CapturedCommand>& commands() const noexcept { return commands_; }
  std::vector<CapturedCommand>& commands() noexcept { return commands_; }

 private:
  std::vector<CapturedCommand> commands_;
  std::uint32_t batches_ = 0;
};

}  // namespace rankd::engine
