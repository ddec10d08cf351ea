#include "rankd/redis/reply_cache.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>

#include "rankd/runtime/debug_check.h"

namespace rankd::redis {

namespace {

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
    : ReplyCache(std::make_shared<ReplyStore>(max_bytes, ttl), key_expiry) {}

ReplyCache::ReplyCache(std::shared_ptr<ReplyStore> store, KeyExpiry key_expiry)
    : store_(std::move(store)), key_expiry_(key_expiry), reports_store_(store_->ClaimReporter()) {
  spare_flights_.reserve(kMaxSpareFlights);
}

ReplyCache::~ReplyCache() {
  RANKD_D_ASSERT(flights_by_command_.size() == 0);
  for (Flight* f : spare_flights_) delete f;
}

std::optional<std::string_view> ReplyCache::Find(ReplyStore::Lookup& lookup,
                                                 std::string_view command, std::uint64_t layout,
                                                 std::uint64_t entry_hash, std::int64_t now_ns) {
  std::optional<std::string_view> reply = lookup.Find(command, layout, entry_hash, now_ns);
  if (reply) ++stats_.hits;
  return reply;
}

ReplyCache::Flight* ReplyCache::Join(std::string_view command, std::uint64_t command_hash) {
  RANKD_D_ASSERT(command_hash == HashCommand(command));
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
  RANKD_D_ASSERT(command_hash == HashCommand(command));
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
  f->key_hash_ = ReplyStore::HashKey(key);
  // Before the command is sent: a change of the key told from now on refuses its reply.
  f->stamp_ = store_->StampOf(f->key_hash_);
  flights_by_command_.Insert(f->command_hash_, f);
  ++stats_.misses;
  return f;
}

void ReplyCache::UnregisterFlight(Flight* flight) noexcept {
  const auto same = [flight](const Flight* f) { return f == flight; };
  flights_by_command_.Erase(flights_by_command_.Find(flight->command_hash_, same));
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
    if (flight->expiry_unknown_) {
      ++stats_.unknown_expiry;
    } else {
      const std::uint64_t layout = flight->layout_;
      const ReplyStore::Reply reply{
          flight->command_,
          flight->key_,
          flight->command_hash_,
          flight->key_hash_,
          layout,
          layout == kRespLayout ? std::string_view(flight->reply_) : flight->decoded_};
      // Refused when the key changed (or the store flushed) since the fetch began: the reply is
      // still handed to its callers (as fresh as any read in flight then), but not kept.
      store_->Store(
          reply, flight->stamp_,
          std::min(now_ns + EntryTtl(flight->command_hash_).count(), flight->key_expires_ns_));
    }
  }
  flight->done_.Set();
  Release(flight);
}

void ReplyCache::Release(Flight* flight) noexcept {
  RANKD_D_ASSERT(flight->holders_ > 0);
  if (--flight->holders_ == 0) {
    RANKD_D_ASSERT(flight->state_ != FlightState::kInFlight);
    Recycle(flight);
  }
}

void ReplyCache::OnInvalidate(std::string_view key) { store_->Invalidate(key); }

void ReplyCache::OnInvalidateAll() { store_->InvalidateAll(); }

ReplyCacheStats ReplyCache::stats() const {
  ReplyCacheStats s = stats_;
  if (!reports_store_) return s;
  const ReplyStoreStats store = store_->stats();
  s.stored = store.stored;
  s.stale_fetches = store.refused_stale;
  s.too_large = store.too_large;
  s.evictions = store.evictions;
  s.expirations = store.expirations;
  s.invalidations = store.invalidations;
  s.invalidated_entries = store.invalidated_entries;
  s.flushes = store.flushes;
  s.entries = store.entries;
  s.bytes = store.bytes;
  return s;
}

bool ReplyCache::Consistent() const {
  return store_->Consistent() && spare_flights_.size() <= kMaxSpareFlights;
}

}  // namespace rankd::redis
