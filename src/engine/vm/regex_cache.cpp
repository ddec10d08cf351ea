#include "regex_cache.h"

#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

// The flags are a sorted subset of "ims": a separator that cannot be one keeps keys apart.
std::string KeyOf(const std::string& pattern, const std::string& flags) {
  return flags + '/' + pattern;
}

// The outcomes of request patterns, least recently used last, within kRegexCacheBytes.
class RegexCache {
 public:
  struct Outcome {
    std::shared_ptr<const re2::RE2> re;  // null: refused, with `error`
    std::string error;
  };

  // The outcome cached under `key`, made the most recently used; nullopt when there is none.
  std::optional<Outcome> Find(const std::string& key) {
    std::lock_guard lock(mu_);
    const auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->outcome;
  }

  void Add(const std::string& key, Outcome outcome) {
    const std::size_t cost = outcome.re ? static_cast<std::size_t>(kParamRegexMaxMem)
                                        : key.size() + outcome.error.size();
    std::lock_guard lock(mu_);
    if (index_.contains(key)) return;  // another thread compiled it meanwhile
    while (!entries_.empty() && bytes_ + cost > kRegexCacheBytes) {
      bytes_ -= entries_.back().cost;
      index_.erase(entries_.back().key);
      entries_.pop_back();
    }
    entries_.push_front(Entry{key, std::move(outcome), cost});
    index_.emplace(key, entries_.begin());
    bytes_ += cost;
    RANKD_D_ASSERT(index_.size() == entries_.size());
  }

  RegexCacheUsage Usage() {
    std::lock_guard lock(mu_);
    return {entries_.size(), bytes_};
  }

 private:
  struct Entry {
    std::string key;
    Outcome outcome;
    std::size_t cost;
  };
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
};

RegexCache& Cache() {
  static RegexCache cache;
  return cache;
}

}  // namespace

std::shared_ptr<const re2::RE2> CompileRegex(const std::string& pattern, const std::string& flags,
                                             std::string* error, std::int64_t max_mem) {
  std::unique_ptr<re2::RE2> re = CompileRegex(pattern, flags, max_mem);
  if (!re->ok()) {
    if (error != nullptr) *error = re->error();
    return nullptr;
  }
  return re;
}

std::shared_ptr<const re2::RE2> CachedRegex(const std::string& pattern, const std::string& flags,
                                            std::string* error) {
  const std::string key = KeyOf(pattern, flags);
  std::optional<RegexCache::Outcome> outcome = Cache().Find(key);
  if (!outcome) {
    outcome.emplace();
    outcome->re = CompileRegex(pattern, flags, &outcome->error, kParamRegexMaxMem);
    Cache().Add(key, *outcome);
  }
  if (!outcome->re && error != nullptr) *error = outcome->error;
  return outcome->re;
}

bool RegexCached(const std::string& pattern, const std::string& flags) {
  return Cache().Find(KeyOf(pattern, flags)).has_value();
}

RegexCacheUsage RegexCacheUsageNow() { return Cache().Usage(); }

}  // namespace rankd::engine
