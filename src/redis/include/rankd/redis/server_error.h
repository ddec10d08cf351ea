// Error replies from Redis ("-ERR ...", "-MOVED 3999 127.0.0.1:6381", ...): their kind and, for
// cluster redirections, where the slot went.
//
// An error reply is a reply, not a parse error: the command failed, the connection is fine.
// Plain values; no thread affinity. The views point into the message given to ClassifyError.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rankd::redis {

// The first word of the message, for the codes a client acts on or counts separately.
enum class ErrorKind : std::uint8_t {
  kErr,          // ERR: generic (syntax, wrong arity, ...)
  kMoved,        // MOVED <slot> <host>:<port>: the slot lives on another node for good
  kAsk,          // ASK <slot> <host>:<port>: ask the other node this once (slot migrating)
  kWrongType,    // WRONGTYPE: operation against a key holding the wrong kind of value
  kCrossSlot,    // CROSSSLOT: keys of one command in different slots
  kTryAgain,     // TRYAGAIN: multi-key command during a slot migration
  kClusterDown,  // CLUSTERDOWN: the cluster cannot serve the slot
  kNoAuth,       // NOAUTH: authentication required
  kWrongPass,    // WRONGPASS: AUTH failed
  kNoPerm,       // NOPERM: ACL forbids the command or key
  kLoading,      // LOADING: the server is loading its dataset
  kBusy,         // BUSY: a script is running
  kNoScript,     // NOSCRIPT: EVALSHA of an unknown script
  kReadOnly,     // READONLY: write against a replica
  kMasterDown,   // MASTERDOWN: replica lost its master and serves no stale data
  kOom,          // OOM: maxmemory reached
  kExecAbort,    // EXECABORT: a transaction was discarded
  kNoProto,      // NOPROTO: HELLO asked for an unsupported protocol
  kOther,        // any other code
};

std::string_view ErrorKindName(ErrorKind kind);

// Where a MOVED or ASK error sends the slot. An empty host means "the host you are connected
// to" (Redis sends ":port" when the node's address is unknown to it).
struct Redirect {
  std::uint16_t slot = 0;
  std::string_view host;
  std::uint16_t port = 0;
};

struct ServerError {
  ErrorKind kind = ErrorKind::kOther;
  std::string_view code;     // the first word, e.g. "WRONGTYPE"
  std::string_view message;  // the whole message
  // MOVED and ASK with a well-formed target; nullopt otherwise (a malformed redirection is
  // then just an error of that kind).
  std::optional<Redirect> redirect;
};

ServerError ClassifyError(std::string_view message);

}  // namespace rankd::redis
