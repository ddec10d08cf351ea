// InvalidationListener: where a connection that tracks the keys it reads (Redis client-side
// caching: CLIENT TRACKING ON over RESP3) reports that what it read may have changed.
//
// The server sends an "invalidate" push naming the keys that changed (once per key read since
// the last push for it), or a null one when it flushed a database. A connection that was up and
// goes down has lost the pushes it would have had: it reports that as OnInvalidateAll too, as it
// ends the session, before any command of the next session is sent.
//
// Thread affinity: called on the connection's event loop thread, from inside the reply dispatch:
// a listener must not suspend, send commands or destroy the connection. Ownership: the connection
// borrows its listener (ConnectionOptions::invalidations), which must outlive it.
#pragma once

#include <string_view>

namespace rankd::redis {

class InvalidationListener {
 public:
  virtual ~InvalidationListener() = default;
  // `key` may have changed (the view lives only during the call).
  virtual void OnInvalidate(std::string_view key) = 0;
  // Anything read may have changed: the server flushed, or a tracking connection was lost.
  virtual void OnInvalidateAll() = 0;
};

}  // namespace rankd::redis
