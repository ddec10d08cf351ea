// ReplyStore: the stored replies of a feature cache (reply_cache.h): entries found by command and
// layout, removed by key, bounded in bytes (SIEVE), each served until its TTL (less up to a tenth,
// by its command's hash) or its key's expiry. A ReplyCache keeps its flights (the fetches in
// progress) itself and its entries here: its own store, or one that several caches share (one per
// shard, docs/operations.md "Feature cache"), so that a reply one shard fetched serves them all.
//
// Exactness across the caches that share it. A cache's connections receive the invalidations of
// the keys they read, and a store is changed by any of them. A fetch begun by one cache may have
// read a key's old value while another cache's connection already told the change: the store
// then must not keep its reply. So every invalidation bumps a stamp of its key (of a slot of 16,384
// that the key's hash picks; a collision only refuses a reply more), and every flush a flush
// epoch; a fetch takes both before its command is sent (StampOf), and Store keeps its reply only
// if neither moved. Both are changed and compared under the store's lock.
//
// Thread affinity: any thread; every member function takes the store's lock but StampOf (atomic
// reads), and a Lookup holds it for its lifetime. Ownership: owns its entries.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>

#include "rankd/redis/flat_index.h"
#include "rankd/runtime/clock.h"

namespace rankd::redis {

// What a store counted (ReplyCacheStats has the same members).
struct ReplyStoreStats {
  std::uint64_t stored = 0;         // replies stored
  std::uint64_t refused_stale = 0;  // replies refused: their key changed since the fetch began
  std::uint64_t too_large = 0;      // replies not stored: larger than the whole budget
  std::uint64_t evictions = 0;      // entries evicted to stay within the budget
  std::uint64_t expirations = 0;    // entries found past their TTL or key expiry (removed)
  std::uint64_t invalidations = 0;  // keys the server said changed
  std::uint64_t invalidated_entries = 0;  // entries those removed
  std::uint64_t flushes = 0;              // InvalidateAll calls
  std::uint64_t entries = 0;              // now
  std::uint64_t bytes = 0;                // now, kEntryOverhead included
};

class ReplyStore {
 public:
  // Bytes counted per entry besides its command, key and reply: its header (72), its allocation's
  // overhead (16) and its slots in the two indexes (each between 1/4 and 1/2 full: 64 to 128).
  static constexpr std::size_t kEntryOverhead = 192;
  // The layout of an entry that holds the reply's RESP bytes.
  static constexpr std::uint64_t kRespLayout = 0;

  ReplyStore(std::size_t max_bytes, rt::Duration ttl);
  ~ReplyStore();
  ReplyStore(const ReplyStore&) = delete;
  ReplyStore& operator=(const ReplyStore&) = delete;

  // The hash of an encoded command, and of its entry in `layout` (the command's own for RESP).
  static std::uint64_t HashCommand(std::string_view command) noexcept;
  static std::uint64_t HashEntry(std::uint64_t command_hash, std::uint64_t layout) noexcept;
  static std::uint64_t HashKey(std::string_view key) noexcept;

  // What a fetch records before its command is sent, and Store compares.
  struct Stamp {
    std::uint32_t key = 0;
    std::uint64_t epoch = 0;
  };
  Stamp StampOf(std::uint64_t key_hash) const noexcept;

  // Lookups under the store's lock, held while the Lookup lives: a found reply's view is valid
  // until then.
  class Lookup {
   public:
    explicit Lookup(ReplyStore& store) : store_(store), lock_(store.mutex_) {}
    // Reads the index slots and entries of `entry_hashes` together (FlatIndex::Touch), so that
    // the lookups that follow do not wait on each one's cache misses in turn.
    void TouchEntries(std::span<const std::uint64_t> entry_hashes) const;
    // The stored reply to `command` in `layout` within its TTL at `now_ns` (one past it is
    // removed); a hit marks the entry visited. `entry_hash` is HashEntry's.
    std::optional<std::string_view> Find(std::string_view command, std::uint64_t layout,
                                         std::uint64_t entry_hash, std::int64_t now_ns);

   private:
    ReplyStore& store_;
    std::lock_guard<std::mutex> lock_;
  };

  // One reply to keep: `reply` is the reply's bytes (kRespLayout) or the layout's decoded form.
  struct Reply {
    std::string_view command;
    std::string_view key;
    std::uint64_t command_hash = 0;  // HashCommand's
    std::uint64_t key_hash = 0;      // HashKey's
    std::uint64_t layout = kRespLayout;
    std::string_view reply;
  };
  // Keeps `reply` until `expires_ns` unless its key was invalidated, or the store flushed, since
  // `stamp` was taken (then false, counted as refused_stale); replaces the command's entry in
  // that layout. A reply larger than the whole budget is not kept (too_large; true).
  bool Store(const Reply& reply, Stamp stamp, std::int64_t expires_ns);
  // The server said `key` changed: its entries go, and replies of it fetched before are refused.
  void Invalidate(std::string_view key);
  // A flush, or a tracking connection lost: every entry goes, every fetch begun before is refused.
  void InvalidateAll();

  // How long an entry of the command of `command_hash` lives: the TTL less up to a tenth of it,
  // by the hash, so that entries filled at once (a warm-up, a burst of new keys) expire spread
  // over that tenth and their fetches do not reach Redis together.
  rt::Duration EntryTtl(std::uint64_t command_hash) const noexcept;
  rt::Duration ttl() const noexcept { return ttl_; }
  std::size_t max_bytes() const noexcept { return max_bytes_; }
  ReplyStoreStats stats() const;
  // True for the first caller only: the cache that reports the store's counts (metrics sum the
  // caches' stats, so a shared store's are in one of them).
  bool ClaimReporter() noexcept { return !reporter_claimed_.exchange(true); }
  // True when the indexes, the SIEVE queue, the hand and the byte count agree (O(entries)).
  bool Consistent() const;

 private:
  struct Entry;
  static constexpr std::size_t kStampSlots = 16384;
  void Remove(Entry* entry) noexcept;
  void EvictOne() noexcept;
  static std::size_t StampSlot(std::uint64_t key_hash) noexcept { return key_hash % kStampSlots; }

  const std::size_t max_bytes_;
  const rt::Duration ttl_;
  mutable std::mutex mutex_;
  // Guarded by mutex_:
  ReplyStoreStats stats_;
  FlatIndex<Entry> by_command_;
  FlatIndex<Entry> by_key_;
  Entry* newest_ = nullptr;  // the SIEVE queue's ends
  Entry* oldest_ = nullptr;
  Entry* hand_ = nullptr;  // the next entry the hand looks at (null: start at the oldest)
  // Written under mutex_, read by StampOf without it.
  std::array<std::atomic<std::uint32_t>, kStampSlots> key_stamps_{};
  std::atomic<std::uint64_t> flush_epoch_{0};
  std::atomic<bool> reporter_claimed_{false};
};

}  // namespace rankd::redis
