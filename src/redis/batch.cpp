#include "rankd/redis/batch.h"

#include <algorithm>

namespace rankd::redis {

std::size_t Batch::error_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(items_.begin(), items_.end(),
                                                [](const Item& i) { return i.error.has_value(); }));
}

}  // namespace rankd::redis
