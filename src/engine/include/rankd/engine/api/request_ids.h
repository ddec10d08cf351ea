// Request ids: what rankd names a request that brings none, and the W3C trace id a request's
// `traceparent` header carries.
//
// A made id is "rankd-" + 12 hex digits drawn at random when the process starts + "-" + a
// counter shared by every shard: unique within a process, and across restarts but for a 2^-48
// chance, so log lines and answers of different shards and runs never share one.
//
// Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rankd::engine {

std::string NextRequestId();

// The trace id (32 lowercase hex digits, not all zero) of a W3C `traceparent` header value
// (version-traceid-parentid-flags, "00-<32 hex>-<16 hex>-<2 hex>"); nullopt when it is not one.
std::optional<std::string_view> TraceIdOf(std::string_view traceparent);

}  // namespace rankd::engine
