#include "rankd/redis/batch.h"

namespace rankd::redis {

void Batch::Reserve(std::size_t commands, std::size_t command_bytes, std::size_t key_bytes) {
  spans_.reserve(spans_.size() + commands);
  pipeline_.targets_.reserve(pipeline_.targets_.size() + commands);
  pipeline_.bytes_.reserve(pipeline_.bytes_.size() + command_bytes);
  keys_.reserve(keys_.size() + key_bytes);
}

std::string_view Batch::command(std::size_t i) const {
  const std::size_t begin = spans_.at(i).command_begin;
  const std::size_t end =
      i + 1 < spans_.size() ? spans_[i + 1].command_begin : pipeline_.bytes_.size();
  return std::string_view(pipeline_.bytes_).substr(begin, end - begin);
}

void Batch::Start(std::string_view key, detail::ReplyTarget target, const DecodedForm* form) {
  spans_.push_back(Span{pipeline_.bytes_.size(), keys_.size(), key.size(), form});
  keys_.append(key);
  pipeline_.targets_.push_back(target);
}

std::size_t Batch::reserved_bytes() const noexcept {
  return pipeline_.bytes_.capacity() + keys_.capacity() + spans_.capacity() * sizeof(Span) +
         pipeline_.targets_.capacity() * sizeof(detail::ReplyTarget) +
         pipeline_.errors_.capacity() * sizeof(std::optional<std::string>);
}

void Batch::Clear() noexcept {
  pipeline_.Clear();
  keys_.clear();
  spans_.clear();
  round_trips_ = 0;
  cache_counts_ = {};
}

}  // namespace rankd::redis
