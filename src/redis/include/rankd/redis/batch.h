// Batch: commands sent together, each on a key and decoding into its own sink: the one batch
// type from the engine to the socket. A Pool pipelines a batch on one connection (the keys only
// travel with their commands); a ClusterClient splits it by the node owning each key and
// pipelines each part. After the call each command's server error reply, if any, is in its item,
// and the batch counts the round trips its callers started (explain reports them).
//
// Thread affinity: the thread that fills and awaits it; the sinks must outlive the call.
// Ownership: owns its keys and encoded commands; borrows the sinks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/connection.h"
#include "rankd/redis/encoder.h"

namespace rankd::redis {

class Batch {
 public:
  struct Item {
    std::string key;      // routes the command in a cluster
    std::string command;  // one complete encoded command (AppendCommand / CommandWriter)
    detail::ReplyTarget target;
    std::optional<std::string> error;  // after the call: the server's error reply
  };

  template <class Sink, class... Args>
  void Add(std::string_view key, Sink& sink, const Args&... args) {
    std::string command;
    AppendCommand(command, args...);
    AddEncoded(std::string(key), sink, std::move(command));
  }
  template <class Sink>
  void AddEncoded(std::string key, Sink& sink, std::string encoded) {
    AddEncodedTarget(std::move(key), detail::ReplyTarget{&sink, &detail::ParseInto<Sink>},
                     std::move(encoded));
  }
  // A command whose sink was type-erased already (callers that forward commands).
  void AddEncodedTarget(std::string key, detail::ReplyTarget target, std::string encoded) {
    items_.push_back(Item{std::move(key), std::move(encoded), target, std::nullopt});
  }

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  // After the call: the server's error reply to command i, if it sent one (its sink then saw
  // nothing).
  const std::optional<std::string>& error(std::size_t i) const { return items_.at(i).error; }
  std::size_t error_count() const noexcept;
  void Clear() noexcept {
    items_.clear();
    round_trips_ = 0;
  }

  // The commands, for the clients that send them.
  std::vector<Item>& items() noexcept { return items_; }
  const std::vector<Item>& items() const noexcept { return items_; }

  // Round trips the callers started for this batch: one per pipelined call, one per command of
  // a batch sent one command at a time (counted as each starts, so a call cut short counts what
  // it sent).
  std::uint64_t round_trips() const noexcept { return round_trips_; }
  void add_round_trips(std::uint64_t n) noexcept { round_trips_ += n; }

 private:
  std::vector<Item> items_;
  std::uint64_t round_trips_ = 0;
};

}  // namespace rankd::redis
