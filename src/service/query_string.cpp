#include "rankd/service/query_string.h"

namespace rankd::service {

std::vector<QueryPair> SplitQuery(std::string_view query) {
  std::vector<QueryPair> pairs;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    pairs.push_back({pair.substr(0, eq),
                     eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1)});
  }
  return pairs;
}

}  // namespace rankd::service
