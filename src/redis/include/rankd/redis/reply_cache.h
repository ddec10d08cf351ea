// ReplyCache: replies to read commands kept on the client and kept exact by the server's
// invalidation messages (Redis client-side caching), for at most a TTL.
//
// An entry is one command's reply, found by the encoded command and the layout it is kept in, and
// removed by the key the command read: Invalidate(key) when the server says the key changed,
// InvalidateAll() when the server flushed or a connection that tracked the reads was lost (its
// invalidations would never come). An entry is also not served past its TTL (less up to a tenth
// of it, spread by its command's hash: entries filled together do not expire together), nor past
// the expiry
// of its key when its fetcher learnt it (Flight::SetKeyExpiry: Redis sends a key's invalidation
// only once it deletes the expired key, which its active expiry may do tens of milliseconds late).
//
// Layouts: an entry holds the reply as the server sent it (its RESP bytes: layout kRespLayout),
// or, when the fetcher's sink has a decoded form (sinks.h, DecodedForm), that sink's decoded form
// of it (the layout the form names): a hit then hands the caller values already decoded, and a
// caller whose sink has another layout (or none) does not find it. One command may so have an
// entry per layout; an invalidation of its key removes them all.
//
// Fetches: a command that missed is fetched under a Flight, from BeginFlight to EndFlight.
//   - Single flight: a second caller of the same command while it is fetched joins the flight
//     (Join) and takes its reply (its RESP bytes, whatever the layouts) instead of sending the
//     command again.
//   - A key invalidated while a fetch of it is in flight makes the fetch stale: its reply is
//     still handed to its callers (it is as fresh as any read in flight then), but not stored,
//     since the reply may predate the change whose one invalidation is now spent.
//
// Memory: the entries' bytes (command, key and reply or decoded form, plus kEntryOverhead each)
// stay within max_bytes. Eviction is SIEVE (Zhang et al., NSDI'24): entries queue in insertion
// order, a hit only sets the entry's visited bit, and a hand moving from the oldest towards the
// newest clears visited bits and evicts the first entry it finds unvisited. A hit costs one hash
// lookup and a store to a bit, with no list to reorder (unlike LRU); popular entries survive
// scans of one-time keys (a feed's long tail), which LRU and FIFO let flush the cache.
//
// Thread affinity: one event loop thread (a shard's), like the connections whose pushes reach
// it. Ownership: owns its entries and flights; a Flight lives while its owner or a joiner holds
// it (Release). Destroy the cache only once its flights are released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/flat_index.h"
#include "rankd/redis/invalidation.h"
#include "rankd/redis/reply_parser.h"
#include "rankd/redis/reply_store.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event.h"

namespace rankd::redis {

struct ReplyCacheStats {
  std::uint64_t hits = 0;                 // commands answered from the cache
  std::uint64_t misses = 0;               // commands fetched (a flight begun)
  std::uint64_t joined = 0;               // commands that took the reply of another caller's fetch
  std::uint64_t stored = 0;               // replies stored
  std::uint64_t stale_fetches = 0;        // replies not stored: their key changed during the fetch
  std::uint64_t too_large = 0;            // replies not stored: larger than the whole budget
  std::uint64_t evictions = 0;            // entries evicted to stay within the budget
  std::uint64_t expirations = 0;          // entries found past their TTL or key expiry (removed)
  std::uint64_t unknown_expiry = 0;       // replies not stored: their key's expiry is unknown
  std::uint64_t invalidations = 0;        // keys the server said changed
  std::uint64_t invalidated_entries = 0;  // entries those removed
  std::uint64_t flushes = 0;              // InvalidateAll calls (a server flush, a connection lost)
  std::uint64_t entries = 0;              // now
  std::uint64_t bytes = 0;                // now, kEntryOverhead included

  // Adds `other`'s counts (several caches' sums, e.g. a schema's over the shards).
  void Add(const ReplyCacheStats& other) noexcept;
};

class ReplyCache final : public InvalidationListener {
 public:
  // Bytes counted per entry besides its command, key and reply: its header (72), its allocation's
  // overhead (16) and its slots in the two indexes (each between 1/4 and 1/2 full: 64 to 128).
  static constexpr std::size_t kEntryOverhead = ReplyStore::kEntryOverhead;

  // The layout of an entry that holds the reply's RESP bytes.
  static constexpr std::uint64_t kRespLayout = ReplyStore::kRespLayout;

  // A key without an expiry (Flight::SetKeyExpiry's default).
  static constexpr std::int64_t kNoKeyExpiry = INT64_MAX;

  // How a flight ended.
  enum class FlightState : std::uint8_t {
    kInFlight,
    kReplied,     // reply(): the reply's bytes
    kErrorReply,  // reply(): the server's error message (never stored)
    kFailed,      // no reply (the call failed or was cancelled): joiners send it themselves
  };

  // One command being fetched. Thread affinity: the cache's.
  class Flight {
   public:
    FlightState state() const noexcept { return state_; }
    // The reply's bytes (kReplied) or the error message (kErrorReply).
    std::string_view reply() const noexcept { return reply_; }
    // Set once the flight ended (state() is no longer kInFlight).
    rt::Event& done() noexcept { return done_; }
    // From the owner's reply sink: the reply's bytes, as the parser completed it.
    void SetReply(std::string_view bytes) { reply_.assign(bytes); }
    // From the owner, before EndFlight: where to write its sink's decoded form of the reply
    // (layout != kRespLayout), which is then stored instead of the reply's bytes.
    std::string* DecodedAs(std::uint64_t layout) noexcept {
      layout_ = layout;
      return &decoded_;
    }
    // From the owner, before EndFlight: its sink had no decoded form of the reply after all; the
    // reply's bytes are stored.
    void KeepReplyBytes() noexcept { layout_ = kRespLayout; }
    // From the owner, before EndFlight: when the key expires (rt::MonotonicNanos's clock, no later
    // than the server's expiry), so that its reply is never served past it. Not called: the key
    // is taken to have no expiry.
    void SetKeyExpiry(std::int64_t expires_ns) noexcept { key_expires_ns_ = expires_ns; }
    // From the owner, before EndFlight: the key's expiry could not be learnt, so the reply is
    // handed to the callers but not stored.
    void SetKeyExpiryUnknown() noexcept { expiry_unknown_ = true; }

   private:
    friend class ReplyCache;
    std::string command_;
    std::string key_;
    std::string reply_;
    std::string decoded_;  // layout_'s form of the reply (layout_ != kRespLayout)
    std::uint64_t layout_ = 0;
    std::uint64_t command_hash_ = 0;
    std::uint64_t key_hash_ = 0;
    FlightState state_ = FlightState::kInFlight;
    ReplyStore::Stamp stamp_;  // the store's, taken before the command was sent
    bool expiry_unknown_ = false;
    std::int64_t key_expires_ns_ = kNoKeyExpiry;
    std::uint32_t holders_ = 1;  // the owner, then each joiner
    rt::Event done_;
  };

  // Whether a fetch learns its key's expiry (ExecuteThroughCache sends a PTTL before each missed
  // command): kChecked unless the keys are known never to be given one.
  enum class KeyExpiry : std::uint8_t { kChecked, kNever };

  // A cache with a store of its own.
  ReplyCache(std::size_t max_bytes, rt::Duration ttl, KeyExpiry key_expiry = KeyExpiry::kChecked);
  // A cache whose entries are `store`'s, shared with other caches (one per shard). The store's
  // counts are in the stats of the first cache made with it (ReplyStore::ClaimReporter).
  ReplyCache(std::shared_ptr<ReplyStore> store, KeyExpiry key_expiry);
  ~ReplyCache() override;
  ReplyCache(const ReplyCache&) = delete;
  ReplyCache& operator=(const ReplyCache&) = delete;

  // The hash that Join and BeginFlight take: of the encoded command (the overloads without it
  // compute it).
  static std::uint64_t HashCommand(std::string_view command) noexcept {
    return ReplyStore::HashCommand(command);
  }
  // The hash that Find takes: of the command's entry in `layout` (the command's hash itself for
  // kRespLayout).
  static std::uint64_t HashEntry(std::uint64_t command_hash, std::uint64_t layout) noexcept {
    return ReplyStore::HashEntry(command_hash, layout);
  }

  // The stored reply to `command` in `layout` (its RESP bytes, or that layout's decoded form) if
  // there is one within its TTL at `now_ns` (one past it is removed), looked up under `lookup`
  // (of store()): the view lives as long as it. A hit marks the entry visited and is counted.
  // `entry_hash` is HashEntry's.
  std::optional<std::string_view> Find(ReplyStore::Lookup& lookup, std::string_view command,
                                       std::uint64_t layout, std::uint64_t entry_hash,
                                       std::int64_t now_ns);
  // The same under a lookup of its own, for a cache whose store no other thread changes (tests):
  // the view lives until the store next changes.
  std::optional<std::string_view> Find(std::string_view command, std::uint64_t layout,
                                       std::uint64_t entry_hash, std::int64_t now_ns) {
    ReplyStore::Lookup lookup(*store_);
    return Find(lookup, command, layout, entry_hash, now_ns);
  }
  std::optional<std::string_view> Find(std::string_view command, std::int64_t now_ns) {
    return Find(command, kRespLayout, HashCommand(command), now_ns);
  }
  // The flight fetching `command` now, held for the caller (Release it), or null.
  Flight* Join(std::string_view command, std::uint64_t command_hash);
  Flight* Join(std::string_view command) { return Join(command, HashCommand(command)); }
  // A new flight for `command`, which reads `key`; the caller owns it and must EndFlight it.
  Flight* BeginFlight(std::string_view key, std::string_view command, std::uint64_t command_hash);
  Flight* BeginFlight(std::string_view key, std::string_view command) {
    return BeginFlight(key, command, HashCommand(command));
  }
  // Ends the owner's flight (state: kReplied with its reply set, kErrorReply with `error`, or
  // kFailed), stores a reply (or its decoded form, Flight::DecodedAs) that is not stale and whose
  // key's expiry is known (expiring EntryTtl after `now_ns` or at the key's expiry, whichever is
  // first), wakes the joiners and releases the owner's hold.
  void EndFlight(Flight* flight, FlightState state, std::int64_t now_ns,
                 std::string_view error = {});
  // Drops a joiner's hold (the last hold frees the flight).
  void Release(Flight* flight) noexcept;

  // InvalidationListener.
  void OnInvalidate(std::string_view key) override;
  void OnInvalidateAll() override;

  // Its flights' counts, and its store's if it reports them.
  ReplyCacheStats stats() const;
  ReplyStore& store() const noexcept { return *store_; }
  std::size_t max_bytes() const noexcept { return store_->max_bytes(); }
  rt::Duration ttl() const noexcept { return store_->ttl(); }
  rt::Duration EntryTtl(std::uint64_t command_hash) const noexcept {
    return store_->EntryTtl(command_hash);
  }
  bool checks_key_expiry() const noexcept { return key_expiry_ == KeyExpiry::kChecked; }
  std::size_t flights() const noexcept { return flights_by_command_.size(); }
  // Ended flights kept for reuse (their strings keep their capacity): as many as a node's wave
  // of misses (a feed's fetch_features reads about a thousand), so that a wave allocates none.
  std::size_t spare_flights() const noexcept { return spare_flights_.size(); }
  static constexpr std::size_t kMaxSpareFlights = 2048;
  // A parser for decoding stored RESP replies into sinks (a hit in kRespLayout, a joiner taking
  // its flight's reply: decoded like a reply off the wire).
  ReplyParser& replay_parser() noexcept { return replay_parser_; }

  // True when the indexes, the SIEVE queue, the hand and the byte count agree (O(entries); for
  // tests and debug checks).
  bool Consistent() const;

 private:
  void UnregisterFlight(Flight* flight) noexcept;
  void Recycle(Flight* flight) noexcept;

  std::shared_ptr<ReplyStore> store_;
  KeyExpiry key_expiry_;
  bool reports_store_;
  ReplyCacheStats stats_;  // of its flights (hits, misses, joined, unknown_expiry, stale_fetches)
  // Flights in progress, by the hash of their command; each flight owns the bytes compared.
  FlatIndex<Flight> flights_by_command_;
  std::vector<Flight*> spare_flights_;  // ended, owned here, at most kMaxSpareFlights
  ReplyParser replay_parser_;
};

}  // namespace rankd::redis
