#include "regex_cache.h"

#include <mutex>
#include <unordered_map>

namespace rankd::engine {

std::shared_ptr<const re2::RE2> CompileRegex(const std::string& pattern, const std::string& flags,
                                             std::string* error) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_case_sensitive(flags.find('i') == std::string::npos);
  options.set_dot_nl(flags.find('s') != std::string::npos);
  const std::string text = flags.find('m') != std::string::npos ? "(?m)" + pattern : pattern;
  auto re = std::make_shared<re2::RE2>(text, options);
  if (!re->ok()) {
    if (error != nullptr) *error = re->error();
    return nullptr;
  }
  return re;
}

std::shared_ptr<const re2::RE2> CachedRegex(const std::string& pattern, const std::string& flags,
                                            std::string* error) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const re2::RE2>> cache;
  // The flags are a sorted subset of "ims": a separator that cannot be one keeps keys apart.
  const std::string key = flags + '/' + pattern;
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::shared_ptr<const re2::RE2> re = CompileRegex(pattern, flags, error);
  if (!re) return nullptr;
  std::lock_guard lock(mu);
  if (cache.size() >= kRegexCacheSize) cache.clear();
  cache.emplace(key, re);
  return re;
}

}  // namespace rankd::engine
