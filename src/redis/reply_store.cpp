// ReplyStore (reply_store.h): a feature cache's stored replies, under one lock.
#include "rankd/redis/reply_store.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>

#include "rankd/runtime/debug_check.h"

namespace rankd::redis {

// One stored reply: a header followed by the command's, the key's and the reply's bytes, in one
// allocation. Linked in the SIEVE queue (newer/older) and in its key's chain (next/prev_for_key).
struct ReplyStore::Entry {
  Entry* newer = nullptr;
  Entry* older = nullptr;
  Entry* next_for_key = nullptr;
  Entry* prev_for_key = nullptr;
  std::int64_t expires_ns = 0;
  std::uint64_t layout = 0;        // kRespLayout: the reply's bytes; else a decoded form's
  std::uint64_t command_hash = 0;  // HashEntry(the command's hash, layout)
  std::uint64_t key_hash = 0;
  std::uint32_t command_size = 0;
  std::uint32_t key_size = 0;
  std::uint32_t reply_size = 0;
  bool visited = false;

  char* data() noexcept { return reinterpret_cast<char*>(this + 1); }
  const char* data() const noexcept { return reinterpret_cast<const char*>(this + 1); }
  std::string_view command() const noexcept { return {data(), command_size}; }
  std::string_view key() const noexcept { return {data() + command_size, key_size}; }
  // The reply's bytes or its decoded form (by layout).
  std::string_view reply() const noexcept { return {data() + command_size + key_size, reply_size}; }
  bool Is(std::string_view c, std::uint64_t l) const noexcept {
    return layout == l && command() == c;
  }
  std::size_t charged_bytes() const noexcept {
    return kEntryOverhead + command_size + key_size + reply_size;
  }

  static Entry* Make(std::string_view command, std::string_view key, std::string_view reply) {
    void* memory = ::operator new(sizeof(Entry) + command.size() + key.size() + reply.size());
    Entry* e = ::new (memory) Entry();
    e->command_size = static_cast<std::uint32_t>(command.size());
    e->key_size = static_cast<std::uint32_t>(key.size());
    e->reply_size = static_cast<std::uint32_t>(reply.size());
    std::memcpy(e->data(), command.data(), command.size());
    std::memcpy(e->data() + command.size(), key.data(), key.size());
    std::memcpy(e->data() + command.size() + key.size(), reply.data(), reply.size());
    return e;
  }
  static void Free(Entry* e) noexcept {
    e->~Entry();
    ::operator delete(e);
  }
};

namespace {

std::uint64_t Hash(std::string_view bytes) noexcept { return std::hash<std::string_view>{}(bytes); }

// The bytes of an entry TouchEntries reads: a hit's header, command (compared), key and reply
// (applied) for the short replies most hits return.
constexpr std::size_t kEntryBytesTouched = 512;

}  // namespace

ReplyStore::ReplyStore(std::size_t max_bytes, rt::Duration ttl)
    : max_bytes_(max_bytes), ttl_(ttl) {}

ReplyStore::~ReplyStore() {
  for (Entry* e = newest_; e != nullptr;) {
    Entry* older = e->older;
    Entry::Free(e);
    e = older;
  }
}

std::uint64_t ReplyStore::HashCommand(std::string_view command) noexcept { return Hash(command); }

std::uint64_t ReplyStore::HashKey(std::string_view key) noexcept { return Hash(key); }

std::uint64_t ReplyStore::HashEntry(std::uint64_t command_hash, std::uint64_t layout) noexcept {
  if (layout == kRespLayout) return command_hash;
  // A multiply-xorshift mix, so that a command's entries in different layouts land apart.
  std::uint64_t h = (command_hash ^ layout) * 0x9e3779b97f4a7c15ULL;
  return h ^ (h >> 29);
}

ReplyStore::Stamp ReplyStore::StampOf(std::uint64_t key_hash) const noexcept {
  return Stamp{key_stamps_[StampSlot(key_hash)].load(std::memory_order_acquire),
               flush_epoch_.load(std::memory_order_acquire)};
}

rt::Duration ReplyStore::EntryTtl(std::uint64_t command_hash) const noexcept {
  // The hash's top 32 bits after a multiplicative mix, as a fraction in [0, 1) of the spread.
  const double fraction =
      static_cast<double>((command_hash * 0x9e3779b97f4a7c15ULL) >> 32) / 4294967296.0;
  const auto cut = static_cast<std::int64_t>(static_cast<double>(ttl_.count() / 10) * fraction);
  return ttl_ - rt::Duration(cut);
}

void ReplyStore::Lookup::TouchEntries(std::span<const std::uint64_t> entry_hashes) const {
  store_.by_command_.Touch(entry_hashes, [](const Entry* e) {
    const char* bytes = reinterpret_cast<const char*>(e);
    const std::size_t size = std::min<std::size_t>(
        sizeof(Entry) + e->command_size + e->key_size + e->reply_size, kEntryBytesTouched);
    unsigned char sum = 0;
    for (std::size_t at = 0; at < size; at += 64) {
      sum += *static_cast<const volatile char*>(bytes + at);
    }
    sum += *static_cast<const volatile char*>(bytes + size - 1);  // the last line, when unaligned
    asm volatile("" : : "r"(sum));
  });
}

std::optional<std::string_view> ReplyStore::Lookup::Find(std::string_view command,
                                                         std::uint64_t layout,
                                                         std::uint64_t entry_hash,
                                                         std::int64_t now_ns) {
  RANKD_D_ASSERT(entry_hash == HashEntry(Hash(command), layout));
  const std::size_t slot = store_.by_command_.Find(
      entry_hash, [command, layout](const Entry* e) { return e->Is(command, layout); });
  if (slot == FlatIndex<Entry>::npos) return std::nullopt;
  Entry* e = store_.by_command_.at(slot);
  if (e->expires_ns <= now_ns) {
    ++store_.stats_.expirations;
    store_.Remove(e);
    return std::nullopt;
  }
  e->visited = true;
  return e->reply();
}

bool ReplyStore::Store(const Reply& r, Stamp stamp, std::int64_t expires_ns) {
  const std::size_t charged = kEntryOverhead + r.command.size() + r.key.size() + r.reply.size();
  std::lock_guard lock(mutex_);
  const Stamp now = StampOf(r.key_hash);
  if (now.key != stamp.key || now.epoch != stamp.epoch) {
    ++stats_.refused_stale;
    return false;
  }
  if (charged > max_bytes_ || r.command.size() > UINT32_MAX || r.reply.size() > UINT32_MAX) {
    ++stats_.too_large;
    return true;
  }
  const std::string_view command = r.command;
  const std::string_view key = r.key;
  const std::uint64_t layout = r.layout;
  const std::uint64_t command_hash = HashEntry(r.command_hash, layout);
  const std::size_t old = by_command_.Find(
      command_hash, [command, layout](const Entry* x) { return x->Is(command, layout); });
  if (old != FlatIndex<Entry>::npos) Remove(by_command_.at(old));
  while (stats_.bytes + charged > max_bytes_ && oldest_ != nullptr) EvictOne();
  Entry* e = Entry::Make(command, key, r.reply);
  e->expires_ns = expires_ns;
  e->layout = layout;
  e->command_hash = command_hash;
  e->key_hash = r.key_hash;
  // Queue: newest first.
  e->older = newest_;
  if (newest_ != nullptr) newest_->newer = e;
  newest_ = e;
  if (oldest_ == nullptr) oldest_ = e;
  by_command_.Insert(command_hash, e);
  // Key chain: the new entry goes first and the key's index slot points at it.
  const std::size_t first =
      by_key_.Find(e->key_hash, [key](const Entry* x) { return x->key() == key; });
  if (first != FlatIndex<Entry>::npos) {
    e->next_for_key = by_key_.at(first);
    e->next_for_key->prev_for_key = e;
    by_key_.set(first, e);
  } else {
    by_key_.Insert(e->key_hash, e);
  }
  stats_.bytes += charged;
  ++stats_.entries;
  ++stats_.stored;
  return true;
}

void ReplyStore::Remove(Entry* e) noexcept {
  if (hand_ == e) hand_ = e->newer;
  // Queue.
  if (e->newer != nullptr) {
    e->newer->older = e->older;
  } else {
    newest_ = e->older;
  }
  if (e->older != nullptr) {
    e->older->newer = e->newer;
  } else {
    oldest_ = e->newer;
  }
  // Key chain: a first entry hands the index to the next one, or the key leaves the index.
  if (e->prev_for_key != nullptr) {
    e->prev_for_key->next_for_key = e->next_for_key;
    if (e->next_for_key != nullptr) e->next_for_key->prev_for_key = e->prev_for_key;
  } else {
    const std::size_t slot = by_key_.Find(e->key_hash, [e](const Entry* x) { return x == e; });
    RANKD_D_ASSERT(slot != FlatIndex<Entry>::npos);
    if (e->next_for_key != nullptr) {
      e->next_for_key->prev_for_key = nullptr;
      by_key_.set(slot, e->next_for_key);
    } else {
      by_key_.Erase(slot);
    }
  }
  by_command_.Erase(by_command_.Find(e->command_hash, [e](const Entry* x) { return x == e; }));
  stats_.bytes -= e->charged_bytes();
  --stats_.entries;
  Entry::Free(e);
}

void ReplyStore::EvictOne() noexcept {
  Entry* e = hand_ != nullptr ? hand_ : oldest_;
  while (e->visited) {
    e->visited = false;
    e = e->newer != nullptr ? e->newer : oldest_;
  }
  hand_ = e->newer;
  ++stats_.evictions;
  Remove(e);
}

void ReplyStore::Invalidate(std::string_view key) {
  const std::uint64_t key_hash = Hash(key);
  std::lock_guard lock(mutex_);
  ++stats_.invalidations;
  key_stamps_[StampSlot(key_hash)].fetch_add(1, std::memory_order_release);
  const std::size_t slot =
      by_key_.Find(key_hash, [key](const Entry* x) { return x->key() == key; });
  if (slot == FlatIndex<Entry>::npos) return;
  Entry* e = by_key_.at(slot);
  while (e != nullptr) {
    Entry* next = e->next_for_key;
    ++stats_.invalidated_entries;
    Remove(e);
    e = next;
  }
}

void ReplyStore::InvalidateAll() {
  std::lock_guard lock(mutex_);
  ++stats_.flushes;
  flush_epoch_.fetch_add(1, std::memory_order_release);
  stats_.invalidated_entries += stats_.entries;
  for (Entry* e = newest_; e != nullptr;) {
    Entry* older = e->older;
    Entry::Free(e);
    e = older;
  }
  newest_ = oldest_ = hand_ = nullptr;
  by_command_.Clear();
  by_key_.Clear();
  stats_.entries = 0;
  stats_.bytes = 0;
}

ReplyStoreStats ReplyStore::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool ReplyStore::Consistent() const {
  std::lock_guard lock(mutex_);
  std::size_t entries = 0;
  std::size_t bytes = 0;
  bool hand_seen = hand_ == nullptr;
  for (const Entry* e = newest_; e != nullptr; e = e->older) {
    ++entries;
    bytes += e->charged_bytes();
    hand_seen = hand_seen || e == hand_;
    if (e->older == nullptr ? e != oldest_ : e->older->newer != e) return false;
    if (e->command_hash != HashEntry(Hash(e->command()), e->layout) ||
        e->key_hash != Hash(e->key())) {
      return false;
    }
    const std::string_view command = e->command();
    const std::uint64_t layout = e->layout;
    const std::size_t slot = by_command_.Find(
        e->command_hash, [command, layout](const Entry* x) { return x->Is(command, layout); });
    if (slot == FlatIndex<Entry>::npos || by_command_.at(slot) != e) return false;
    const Entry* first = e;
    while (first->prev_for_key != nullptr) first = first->prev_for_key;
    const std::string_view key = e->key();
    const std::size_t k =
        by_key_.Find(e->key_hash, [key](const Entry* x) { return x->key() == key; });
    if (k == FlatIndex<Entry>::npos || by_key_.at(k) != first) return false;
  }
  return hand_seen && entries == stats_.entries && entries == by_command_.size() &&
         bytes == stats_.bytes && bytes <= max_bytes_;
}

}  // namespace rankd::redis
