// A request's query string (`dry_run=1&k=10`) as name/value pairs, in order. Values are not
// percent-decoded: the service's query values are names (`[a-z0-9_]`) and numbers.
//
// Plain function; any thread. The pairs view the query's text.
#pragma once

#include <string_view>
#include <vector>

namespace rankd::service {

struct QueryPair {
  std::string_view name;
  std::string_view value;  // empty for `name` or `name=`
};

// The pairs of `query` (the text after '?'), skipping empty ones (`a=1&&b=2`).
std::vector<QueryPair> SplitQuery(std::string_view query);

}  // namespace rankd::service
