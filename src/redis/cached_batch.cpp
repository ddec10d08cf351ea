#include "rankd/redis/cached_batch.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "rankd/redis/sinks.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::redis {
namespace {

using Flight = ReplyCache::Flight;
using FlightState = ReplyCache::FlightState;

// A missed command's reply target: the command's own sink, and its flight, which keeps a copy of
// the reply's bytes for the cache and the flight's joiners.
struct Recorder {
  detail::ReplyTarget inner;
  Flight* flight;
};

ParseStatus RecordInto(ReplyParser& parser, std::string_view buffer, void* sink,
                       std::size_t* consumed) {
  auto* recorder = static_cast<Recorder*>(sink);
  const ParseStatus status = recorder->inner.parse(parser, buffer, recorder->inner.sink, consumed);
  if (status == ParseStatus::kComplete) recorder->flight->SetReply(buffer.substr(0, *consumed));
  return status;
}

// A PTTL's reply: the key's time to live in milliseconds, -1 (no expiry), -2 (no key), or
// kUnknown (no integer came: an error reply, or the call failed).
struct PttlSink : NullSink {
  static constexpr std::int64_t kUnknown = INT64_MIN;
  std::int64_t ms = kUnknown;
  void OnInteger(std::int64_t v) { ms = v; }
};

// Tells `flight` when its key expires, from a PTTL sent before its command (at `sent_ns` or
// later, so that sent_ns + the time to live is no later than the server's expiry).
void SetKeyExpiry(Flight* flight, const PttlSink& pttl, std::int64_t sent_ns) {
  if (pttl.ms >= 0) {
    flight->SetKeyExpiry(sent_ns + pttl.ms * 1'000'000);
  } else if (pttl.ms != -1 && pttl.ms != -2) {
    flight->SetKeyExpiryUnknown();
  }
}

// Decodes a stored reply (one complete, well-formed reply: it was parsed before it was stored)
// into `target`'s sink.
void Replay(ReplyCache& cache, detail::ReplyTarget target, std::string_view reply) {
  ReplyParser& parser = cache.replay_parser();
  parser.Reset();
  std::size_t consumed = 0;
  [[maybe_unused]] const ParseStatus status = target.parse(parser, reply, target.sink, &consumed);
  RANKD_D_ASSERT(status == ParseStatus::kComplete && consumed == reply.size());
}

// The flights one call holds, by the index of their command in its batch. However the call ends,
// the flights it owns and has not ended end as failed (their joiners then send the command
// themselves) and its joined flights are released.
struct Holds {
  struct Hold {
    std::size_t index;
    Flight* flight;  // null once ended or released
  };
  ReplyCache& cache;
  std::vector<Hold> owned;
  std::vector<Hold> joined;

  explicit Holds(ReplyCache& c) : cache(c) {}
  Holds(const Holds&) = delete;
  Holds& operator=(const Holds&) = delete;
  ~Holds() {
    for (Hold& h : owned) {
      if (h.flight != nullptr) cache.EndFlight(h.flight, FlightState::kFailed, 0);
    }
    for (Hold& h : joined) {
      if (h.flight != nullptr) cache.Release(h.flight);
    }
  }
};

// Sends `part` through `send`, adding the round trips it took to `batch`'s however it ends.
rt::Task<void> SendPart(const BatchSender& send, Batch& part, Batch& batch) {
  struct CountRoundTrips {
    Batch& part;
    Batch& batch;
    ~CountRoundTrips() { batch.add_round_trips(part.round_trips()); }
  } count{part, batch};
  co_await send(part);
}

}  // namespace

rt::Task<void> ExecuteThroughCache(ReplyCache& cache, Batch& batch, const BatchSender& send) {
  const std::size_t n = batch.size();
  const std::int64_t now = rt::MonotonicNanos();
  Batch::CacheCounts& counts = batch.cache_counts();
  Holds holds(cache);
  Batch misses;
  std::vector<Recorder> recorders;
  recorders.reserve(n);  // the sinks' addresses stay fixed while the replies are due
  // Each missed command is preceded by a PTTL of its key when the cache checks key expiry
  // (tracked like the read, so a change of the expiry between the two is invalidated too).
  const bool check_expiry = cache.checks_key_expiry();
  std::vector<PttlSink> pttls;
  if (check_expiry) pttls.reserve(n);
  // A command whose sink has a decoded form is looked up in that form's layout (a hit applies
  // it), any other in RESP (a hit is parsed into the sink). The lookups go kTouched at a time:
  // the cache reads their index slots and entries together first (TouchEntries), so that their
  // cache misses overlap rather than come one after another between the hits' applies.
  constexpr std::size_t kTouched = 32;
  // Per command, in one allocation: its entry's hash (what TouchEntries and Find take), its
  // command's hash (Join, BeginFlight) and the layout it is looked up in.
  std::vector<std::uint64_t> lookup_words(3 * n);
  const std::span<std::uint64_t> entry_hashes(lookup_words.data(), n);
  const std::span<std::uint64_t> command_hashes(lookup_words.data() + n, n);
  const std::span<std::uint64_t> layouts(lookup_words.data() + 2 * n, n);
  for (std::size_t i = 0; i < n; ++i) {
    const DecodedForm* form = batch.decoded_form(i);
    command_hashes[i] = ReplyCache::HashCommand(batch.command(i));
    layouts[i] = form != nullptr ? form->layout(batch.target(i).sink) : ReplyCache::kRespLayout;
    RANKD_D_ASSERT(form == nullptr || layouts[i] != ReplyCache::kRespLayout);
    entry_hashes[i] = ReplyCache::HashEntry(command_hashes[i], layouts[i]);
  }
  // The store's lock is held for a chunk's lookups and their hits' applies (a hit's view lives
  // as long as the lock), and let go between chunks: other shards sharing the store get their
  // turn, and nothing waits while a lock is held.
  std::optional<ReplyStore::Lookup> lookup;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % kTouched == 0) {
      lookup.reset();
      lookup.emplace(cache.store());
      lookup->TouchEntries(entry_hashes.subspan(i, std::min(kTouched, n - i)));
    }
    const std::string_view command = batch.command(i);
    if (const std::optional<std::string_view> reply =
            cache.Find(*lookup, command, layouts[i], entry_hashes[i], now)) {
      if (layouts[i] != ReplyCache::kRespLayout) {
        batch.decoded_form(i)->apply(batch.target(i).sink, *reply);
      } else {
        Replay(cache, batch.target(i), *reply);
      }
      ++counts.hits;
      continue;
    }
    if (Flight* flight = cache.Join(command, command_hashes[i])) {
      holds.joined.push_back({i, flight});
      ++counts.joined;
      continue;
    }
    Flight* flight = cache.BeginFlight(batch.key(i), command, command_hashes[i]);
    holds.owned.push_back({i, flight});
    recorders.push_back(Recorder{batch.target(i), flight});
    if (check_expiry) misses.Add(batch.key(i), pttls.emplace_back(), "PTTL", batch.key(i));
    misses.AddEncodedTarget(batch.key(i), detail::ReplyTarget{&recorders.back(), &RecordInto},
                            command);
    ++counts.misses;
  }
  lookup.reset();
  if (!misses.empty()) {
    co_await SendPart(send, misses, batch);
    // A reply is served at most the TTL after its fetch began, and never past its key's expiry.
    for (std::size_t k = 0; k < holds.owned.size(); ++k) {
      Holds::Hold& h = holds.owned[k];
      if (const std::optional<std::string>& error = misses.error(check_expiry ? 2 * k + 1 : k)) {
        batch.set_error(h.index, *error);
        cache.EndFlight(h.flight, FlightState::kErrorReply, now, *error);
      } else {
        if (check_expiry) SetKeyExpiry(h.flight, pttls[k], now);
        // The sink's decoded form is stored where it has one (read back from the sink, which
        // took the reply on its way in).
        if (const DecodedForm* form = batch.decoded_form(h.index)) {
          const void* sink = batch.target(h.index).sink;
          if (!form->encode(sink, h.flight->DecodedAs(layouts[h.index]))) {
            h.flight->KeepReplyBytes();
          }
        }
        cache.EndFlight(h.flight, FlightState::kReplied, now);
      }
      h.flight = nullptr;
    }
  }
  std::vector<std::size_t> resend;
  for (Holds::Hold& h : holds.joined) {
    co_await h.flight->done().Wait();
    switch (h.flight->state()) {
      case FlightState::kReplied:
        Replay(cache, batch.target(h.index), h.flight->reply());
        break;
      case FlightState::kErrorReply:
        batch.set_error(h.index, std::string(h.flight->reply()));
        break;
      case FlightState::kFailed:
      case FlightState::kInFlight:
        resend.push_back(h.index);
        break;
    }
    cache.Release(h.flight);
    h.flight = nullptr;
  }
  if (resend.empty()) co_return;
  Batch again;
  for (const std::size_t i : resend) {
    again.AddEncodedTarget(batch.key(i), batch.target(i), batch.command(i), batch.decoded_form(i));
  }
  co_await SendPart(send, again, batch);
  for (std::size_t k = 0; k < resend.size(); ++k) {
    if (const std::optional<std::string>& error = again.error(k)) {
      batch.set_error(resend[k], *error);
    }
  }
}

}  // namespace rankd::redis
