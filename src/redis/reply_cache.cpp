#include "rankd/redis/reply_cache.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>

#include "rankd/runtime/debug_check.h"

namespace rankd::redis {

// One stored reply: a header followed by the command's, the key's and the reply's bytes, in one
// allocation. Linked in the SIEVE queue (newer/older) and in its key's chain (next/prev_for_key).
struct ReplyCache::Entry {
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
// A spare flight whose reply buffer grew past this gives the buffer back: kMaxSpareFlights of
// them keep at most 2 KiB of buffers each (a reply, a decoded form) besides a command and a key.
constexpr std::size_t kSpareReplyCapacity = 1024;

}  // namespace

void ReplyCacheStats::Add(const ReplyCacheStats& o) noexcept {
  hits += o.hits;
  misses += o.misses;
  joined += o.joined;
  stored += o.stored;
  stale_fetches += o.stale_fetches;
  too_large += o.too_large;
  evictions += o.evictions;
  expirations += o.expirations;
  unknown_expiry += o.unknown_expiry;
  invalidations += o.invalidations;
  invalidated_entries += o.invalidated_entries;
  flushes += o.flushes;
  entries += o.entries;
  bytes += o.bytes;
}

ReplyCache::ReplyCache(std::size_t max_bytes, rt::Duration ttl, KeyExpiry key_expiry)
    : max_bytes_(max_bytes), ttl_(ttl), key_expiry_(key_expiry) {
  spare_flights_.reserve(kMaxSpareFlights);
}

ReplyCache::~ReplyCache() {
  RANKD_D_ASSERT(flights_by_command_.size() == 0);
  for (Flight* f : spare_flights_) delete f;
  for (Entry* e = newest_; e != nullptr;) {
    Entry* older = e->older;
    Entry::Free(e);
    e = older;
  }
}

std::uint64_t ReplyCache::HashCommand(std::string_view command) noexcept { return Hash(command); }

std::uint64_t ReplyCache::HashEntry(std::uint64_t command_hash, std::uint64_t layout) noexcept {
  if (layout == kRespLayout) return command_hash;
  // A multiply-xorshift mix, so that a command's entries in different layouts land apart.
  std::uint64_t h = (command_hash ^ layout) * 0x9e3779b97f4a7c15ULL;
  return h ^ (h >> 29);
}

void ReplyCache::TouchEntries(std::span<const std::uint64_t> entry_hashes) const {
  by_command_.Touch(entry_hashes, [](const Entry* e) {
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

std::optional<std::string_view> ReplyCache::Find(std::string_view command, std::uint64_t layout,
                                                 std::uint64_t entry_hash, std::int64_t now_ns) {
  RANKD_D_ASSERT(entry_hash == HashEntry(Hash(command), layout));
  const std::size_t slot = by_command_.Find(
      entry_hash, [command, layout](const Entry* e) { return e->Is(command, layout); });
  if (slot == FlatIndex<Entry>::npos) return std::nullopt;
  Entry* e = by_command_.at(slot);
  if (e->expires_ns <= now_ns) {
    ++stats_.expirations;
    Remove(e);
    return std::nullopt;
  }
  e->visited = true;
  ++stats_.hits;
  return e->reply();
}

ReplyCache::Flight* ReplyCache::Join(std::string_view command, std::uint64_t command_hash) {
  RANKD_D_ASSERT(command_hash == Hash(command));
  const std::size_t slot = flights_by_command_.Find(
      command_hash, [command](const Flight* f) { return f->command_ == command; });
  if (slot == FlatIndex<Flight>::npos) return nullptr;
  Flight* f = flights_by_command_.at(slot);
  ++f->holders_;
  ++stats_.joined;
  return f;
}

ReplyCache::Flight* ReplyCache::BeginFlight(std::string_view key, std::string_view command,
                                            std::uint64_t command_hash) {
  RANKD_D_ASSERT(command_hash == Hash(command));
  RANKD_D_ASSERT(flights_by_command_.Find(command_hash, [command](const Flight* f) {
    return f->command_ == command;
  }) == FlatIndex<Flight>::npos);
  Flight* f;
  if (spare_flights_.empty()) {
    f = new Flight();
  } else {
    f = spare_flights_.back();
    spare_flights_.pop_back();
  }
  f->command_.assign(command);
  f->key_.assign(key);
  f->command_hash_ = command_hash;
  f->key_hash_ = Hash(key);
  flights_by_command_.Insert(f->command_hash_, f);
  flights_by_key_.Insert(f->key_hash_, f);
  ++stats_.misses;
  return f;
}

void ReplyCache::UnregisterFlight(Flight* flight) noexcept {
  const auto same = [flight](const Flight* f) { return f == flight; };
  flights_by_command_.Erase(flights_by_command_.Find(flight->command_hash_, same));
  flights_by_key_.Erase(flights_by_key_.Find(flight->key_hash_, same));
}

void ReplyCache::Recycle(Flight* flight) noexcept {
  if (spare_flights_.size() >= kMaxSpareFlights) {
    delete flight;
    return;
  }
  flight->command_.clear();
  flight->key_.clear();
  flight->layout_ = kRespLayout;
  if (flight->decoded_.capacity() > kSpareReplyCapacity) {
    std::string().swap(flight->decoded_);
  } else {
    flight->decoded_.clear();
  }
  if (flight->reply_.capacity() > kSpareReplyCapacity) {
    std::string().swap(flight->reply_);
  } else {
    flight->reply_.clear();
  }
  flight->state_ = FlightState::kInFlight;
  flight->stale_ = false;
  flight->expiry_unknown_ = false;
  flight->key_expires_ns_ = kNoKeyExpiry;
  flight->holders_ = 1;
  flight->done_.Reset();
  spare_flights_.push_back(flight);  // within the capacity reserved below: no throw
}

void ReplyCache::EndFlight(Flight* flight, FlightState state, std::int64_t now_ns,
                           std::string_view error) {
  RANKD_D_ASSERT(flight->state_ == FlightState::kInFlight);
  RANKD_D_ASSERT(state != FlightState::kInFlight);
  UnregisterFlight(flight);
  flight->state_ = state;
  if (state == FlightState::kErrorReply) flight->reply_.assign(error);
  if (state == FlightState::kReplied) {
    if (flight->stale_) {
      ++stats_.stale_fetches;
    } else if (flight->expiry_unknown_) {
      ++stats_.unknown_expiry;
    } else {
      Store(*flight,
            std::min(now_ns + EntryTtl(flight->command_hash_).count(), flight->key_expires_ns_));
    }
  }
  flight->done_.Set();
  Release(flight);
}

rt::Duration ReplyCache::EntryTtl(std::uint64_t command_hash) const noexcept {
  // The hash's top 32 bits after a multiplicative mix, as a fraction in [0, 1) of the spread.
  const double fraction =
      static_cast<double>((command_hash * 0x9e3779b97f4a7c15ULL) >> 32) / 4294967296.0;
  const auto cut = static_cast<std::int64_t>(static_cast<double>(ttl_.count() / 10) * fraction);
  return ttl_ - rt::Duration(cut);
}

void ReplyCache::Release(Flight* flight) noexcept {
  RANKD_D_ASSERT(flight->holders_ > 0);
  if (--flight->holders_ == 0) {
    RANKD_D_ASSERT(flight->state_ != FlightState::kInFlight);
    Recycle(flight);
  }
}

void ReplyCache::Store(const Flight& flight, std::int64_t expires_ns) {
  const std::string_view key = flight.key_;
  const std::string_view command = flight.command_;
  const std::uint64_t layout = flight.layout_;
  const std::string_view reply = layout == kRespLayout ? flight.reply_ : flight.decoded_;
  const std::size_t charged = kEntryOverhead + command.size() + key.size() + reply.size();
  if (charged > max_bytes_ || command.size() > UINT32_MAX || reply.size() > UINT32_MAX) {
    ++stats_.too_large;
    return;
  }
  const std::uint64_t command_hash = HashEntry(flight.command_hash_, layout);
  const std::size_t old = by_command_.Find(
      command_hash, [command, layout](const Entry* x) { return x->Is(command, layout); });
  if (old != FlatIndex<Entry>::npos) Remove(by_command_.at(old));
  while (stats_.bytes + charged > max_bytes_ && oldest_ != nullptr) EvictOne();
  Entry* e = Entry::Make(command, key, reply);
  e->expires_ns = expires_ns;
  e->layout = layout;
  e->command_hash = command_hash;
  e->key_hash = flight.key_hash_;
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
}

void ReplyCache::Remove(Entry* e) noexcept {
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

void ReplyCache::EvictOne() noexcept {
  Entry* e = hand_ != nullptr ? hand_ : oldest_;
  while (e->visited) {
    e->visited = false;
    e = e->newer != nullptr ? e->newer : oldest_;
  }
  hand_ = e->newer;
  ++stats_.evictions;
  Remove(e);
}

void ReplyCache::OnInvalidate(std::string_view key) {
  ++stats_.invalidations;
  const std::uint64_t key_hash = Hash(key);
  flights_by_key_.ForEachMatch(
      key_hash, [key](const Flight* f) { return f->key_ == key; },
      [this](std::size_t slot) { flights_by_key_.at(slot)->stale_ = true; });
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

void ReplyCache::OnInvalidateAll() {
  ++stats_.flushes;
  flights_by_command_.ForEach([](Flight* flight) { flight->stale_ = true; });
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

bool ReplyCache::Consistent() const {
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
         bytes == stats_.bytes && bytes <= max_bytes_ &&
         flights_by_command_.size() == flights_by_key_.size() &&
         spare_flights_.size() <= kMaxSpareFlights;
}

}  // namespace rankd::redis
