// ExecuteThroughCache: a Batch sent through a ReplyCache (client-side caching, reply_cache.h).
//
// Each command is answered, in this order of preference:
//   1. by its stored reply: where the command's sink has a decoded form (sinks.h), that form's
//      decoded values applied to the sink; otherwise the reply's bytes, decoded into the sink as
//      if they had come off the wire;
//   2. by the reply of the same command another caller is fetching now (single flight);
//   3. by the server: the misses go out as one batch through `send` (the client's own pipelined
//      call, which counts its round trips on that batch: they are added to `batch`'s), their
//      replies recorded on their way into the sinks and stored unless their key was invalidated
//      during the fetch (in the sink's decoded form, read back from the sink once the reply is
//      in, where it has one). When the cache checks key expiry, each missed command is preceded in
//      the batch by `PTTL key`, and its reply is stored to expire no later than the key does (a key
//      whose PTTL failed is not stored); the PTTLs are not the caller's and reach no sink of it.
// A joined fetch that ended without a reply (its caller gave up, its connection failed) is sent
// again, in a second batch. Error replies reach batch.error(i) as without a cache and are never
// stored. A failure of `send` (connection, deadline, cancellation) throws as without a cache;
// the flights this call owned end as failed, so that their joiners send their commands
// themselves.
//
// Thread affinity: the cache's loop thread. The batch's sinks must outlive the call.
#pragma once

#include <functional>

#include "rankd/redis/batch.h"
#include "rankd/redis/reply_cache.h"
#include "rankd/runtime/task.h"

namespace rankd::redis {

// Sends a batch as the client would without a cache.
using BatchSender = std::function<rt::Task<void>(Batch&)>;

rt::Task<void> ExecuteThroughCache(ReplyCache& cache, Batch& batch, const BatchSender& send);

}  // namespace rankd::redis
