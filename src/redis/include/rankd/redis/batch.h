// Batch: commands sent together, each on a key and decoding into its own sink: the one batch
// type from the engine to the socket. A Pool pipelines a batch on one connection (the keys only
// travel with their commands); a ClusterClient splits it by the node owning each key and
// pipelines each part. After the call each command's server error reply, if any, is recorded
// (error(i)), and the batch counts the round trips its callers started (explain reports them).
//
// The commands are encoded straight into one buffer, the bytes a pipeline writes, and the keys
// into another: adding a command allocates nothing once the buffers have grown (a node reserves
// them for its wave up front), and the Pool sends the buffer as it is.
//
//   batch.Reserve(rows.size(), rows.size() * 40, rows.size() * 16);
//   for (...) {
//     key.clear();
//     schema.AppendKey(key, id);                      // a scratch string, reused
//     batch.Command(key, sinks[r], 3).Arg("LRANGE").Arg(key).Arg(0).Arg(9);
//   }
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
  // Appends one command routed by `key` (copied), its reply decoded into `sink`; exactly `argc`
  // arguments must be given to the returned writer (the key among them, where the command takes
  // it), before the next command is added.
  template <class Sink>
  CommandWriter Command(std::string_view key, Sink& sink, std::size_t argc) {
    Start(key, detail::ReplyTarget{&sink, &detail::ParseInto<Sink>}, DecodedFormOf<Sink>());
    return CommandWriter(pipeline_.bytes_, argc);
  }
  template <class Sink, class... Args>
  void Add(std::string_view key, Sink& sink, const Args&... args) {
    Start(key, detail::ReplyTarget{&sink, &detail::ParseInto<Sink>}, DecodedFormOf<Sink>());
    AppendCommand(pipeline_.bytes_, args...);
  }
  // `encoded` is one complete command (AppendCommand / CommandWriter).
  template <class Sink>
  void AddEncoded(std::string_view key, Sink& sink, std::string_view encoded) {
    AddEncodedTarget(key, detail::ReplyTarget{&sink, &detail::ParseInto<Sink>}, encoded,
                     DecodedFormOf<Sink>());
  }
  // A command whose sink was type-erased already (callers that forward commands), with the
  // sink's decoded form if it has one.
  void AddEncodedTarget(std::string_view key, detail::ReplyTarget target, std::string_view encoded,
                        const DecodedForm* form = nullptr) {
    Start(key, target, form);
    pipeline_.bytes_.append(encoded);
  }
  // Room for `commands` commands of `command_bytes` and `key_bytes` in all.
  void Reserve(std::size_t commands, std::size_t command_bytes, std::size_t key_bytes);

  std::size_t size() const noexcept { return spans_.size(); }
  bool empty() const noexcept { return spans_.empty(); }
  // Command i: its routing key, its encoded bytes and where its reply goes.
  std::string_view key(std::size_t i) const {
    const Span& s = spans_.at(i);
    return std::string_view(keys_).substr(s.key_begin, s.key_size);
  }
  std::string_view command(std::size_t i) const;
  detail::ReplyTarget target(std::size_t i) const { return pipeline_.targets_.at(i); }
  // Command i's sink's decoded form (sinks.h), or null.
  const DecodedForm* decoded_form(std::size_t i) const { return spans_.at(i).form; }

  // After the call: the server's error reply to command i, if it sent one (its sink then saw
  // nothing).
  const std::optional<std::string>& error(std::size_t i) const { return pipeline_.error(i); }
  std::size_t error_count() const noexcept { return pipeline_.error_count(); }
  // For the clients that send the commands: forget the last call's errors, record one.
  void ResetErrors() { pipeline_.ResetErrors(); }
  void set_error(std::size_t i, std::string message) { pipeline_.set_error(i, std::move(message)); }

  // Empties it for reuse; its buffers keep their capacity.
  void Clear() noexcept;
  // The bytes its buffers hold reserved (what a kept, cleared batch costs).
  std::size_t reserved_bytes() const noexcept;

  // Every command in order, as one pipeline (a Pool sends it as it is).
  Pipeline& pipeline() noexcept { return pipeline_; }

  // Round trips the callers started for this batch: one per pipelined call, one per command of
  // a batch sent one command at a time (counted as each starts, so a call cut short counts what
  // it sent).
  std::uint64_t round_trips() const noexcept { return round_trips_; }
  void add_round_trips(std::uint64_t n) noexcept { round_trips_ += n; }

  // How its commands went through a reply cache (ExecuteThroughCache; all zero without one).
  struct CacheCounts {
    std::uint64_t hits = 0;    // answered from a stored reply
    std::uint64_t joined = 0;  // answered by another caller's fetch of the same command
    std::uint64_t misses = 0;  // sent to the server
  };
  CacheCounts& cache_counts() noexcept { return cache_counts_; }
  const CacheCounts& cache_counts() const noexcept { return cache_counts_; }

 private:
  struct Span {
    std::size_t command_begin;  // in pipeline_.bytes()
    std::size_t key_begin;      // in keys_
    std::size_t key_size;
    const DecodedForm* form;  // the sink's, or null
  };
  void Start(std::string_view key, detail::ReplyTarget target, const DecodedForm* form);

  Pipeline pipeline_;  // the encoded commands, their reply targets and errors
  std::string keys_;
  std::vector<Span> spans_;
  std::uint64_t round_trips_ = 0;
  CacheCounts cache_counts_;
};

}  // namespace rankd::redis
