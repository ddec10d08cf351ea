// What a reply is decoded into: the sink interface of ReplyParser.
//
// The parser calls one method per value, depth first. An aggregate is announced with
// OnAggregateBegin(type, n), followed by its n values, then OnAggregateEnd(type); a map of k
// entries announces n = 2k values (key, value, key, value, ...). Strings are views into the
// read buffer, valid only during the call: a sink that keeps one copies it.
//
// A sink sees only complete, well-formed replies (the parser checks the whole reply first), but
// it may still find a reply it did not expect (an error, a wrong type): it records that itself.
//
// A sink may be handed its command's reply twice: ClusterClient sends a node's pipeline again
// (to a replica, or after a reload) when its connection was lost, and the replies that had
// arrived before are handed over again. The last reply is the command's answer, so a sink whose
// calls can be resent starts over when a second reply begins (the engine's sinks do,
// engine/sources/reply_sinks.h); Int64ListSink and HmgetRowSink append and are for single
// connections only.
//
// NullSink ignores everything. Derive from it and define the methods you need (the parser is a
// template over the sink, so such calls are direct and inline). Derive from ReplySink instead
// when the sink must be chosen at run time.
//
// Thread affinity: a sink is used by the thread that parses into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rankd/redis/resp.h"

namespace rankd::redis {

struct NullSink {
  void OnSimpleString(std::string_view) {}
  // A simple error ('-') or a bulk error ('!'): the server's message, e.g. "WRONGTYPE ...".
  void OnError(std::string_view) {}
  void OnInteger(std::int64_t) {}
  void OnBulk(std::string_view) {}
  // format is the three-letter format ("txt", "mkd"); text follows the ':'.
  void OnVerbatim(std::string_view /*format*/, std::string_view /*text*/) {}
  void OnBigNumber(std::string_view /*digits*/) {}
  void OnDouble(double) {}
  void OnBoolean(bool) {}
  void OnNull() {}
  void OnAggregateBegin(Type, std::size_t /*values*/) {}
  void OnAggregateEnd(Type) {}
};

// The same interface with virtual dispatch (for a sink picked at run time, e.g. by a command
// waiting in a pipeline). Unhandled values are ignored.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  virtual void OnSimpleString(std::string_view) {}
  virtual void OnError(std::string_view) {}
  virtual void OnInteger(std::int64_t) {}
  virtual void OnBulk(std::string_view) {}
  virtual void OnVerbatim(std::string_view /*format*/, std::string_view /*text*/) {}
  virtual void OnBigNumber(std::string_view /*digits*/) {}
  virtual void OnDouble(double) {}
  virtual void OnBoolean(bool) {}
  virtual void OnNull() {}
  virtual void OnAggregateBegin(Type, std::size_t /*values*/) {}
  virtual void OnAggregateEnd(Type) {}
};

// A sink's decoded form of a reply: what a reply cache keeps in place of the reply's bytes for a
// sink that has one (reply_cache.h, cached_batch.h), so that a hit fills the sink without parsing
// RESP or applying the sink's own value rules again. A sink type offers one as a static member
// `static const DecodedForm kDecodedForm;` (Batch finds it).
struct DecodedForm {
  // The layout of the sink's decoded form, never 0: two sinks of one layout encode the same
  // bytes for the same reply and apply each other's (e.g. the same value types, field by field).
  std::uint64_t (*layout)(const void* sink) noexcept;
  // Writes (assigns) the decoded form of the last reply the sink took to `out`; false when it
  // has none worth keeping (the reply was not of the shape the sink expects).
  bool (*encode)(const void* sink, std::string* out);
  // Fills the sink as being handed that reply would: `decoded` is encode's output from a sink
  // of the same layout.
  void (*apply)(void* sink, std::string_view decoded);
};

// The decoded form of Sink, or null when it has none.
template <class Sink>
constexpr const DecodedForm* DecodedFormOf() noexcept {
  if constexpr (requires { Sink::kDecodedForm; }) {
    return &Sink::kDecodedForm;
  } else {
    return nullptr;
  }
}

}  // namespace rankd::redis
