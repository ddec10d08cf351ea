// The flags `rankd run` and `rankd serve` share (where the plans are, which Redis to read, how
// to schedule), and the loop over a command line or config file that applies them.
//
// Plain values and functions, used from main's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::cli {

// A flag with a bad value: the message names the flag and the value.
class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EngineFlags {
  std::string plans;
  std::string registry;
  engine::Environment env = engine::Environment::kDev;
  std::vector<engine::EndpointOverride> endpoints;
  engine::Scheduler scheduler = engine::Scheduler::kAsync;
  std::int64_t deadline_ms = 100;
};

// The help lines of the engine flags, for a command's usage text.
extern const std::string_view kEngineFlagsHelp;

// Applies `--name value` when it is an engine flag (true), or returns false for another name.
// Throws FlagError for a bad value.
bool ApplyEngineFlag(EngineFlags& flags, std::string_view name, std::string_view value);
// Throws FlagError when --plans or --registry is missing.
void RequireEngineFlags(const EngineFlags& flags);

// Calls `apply(name, value)` for each flag of argv[1..argc), written `--name value` or
// `--name=value`; `apply` returns false for a name it does not know. Throws FlagError for an
// unknown flag, a stray argument or a missing value.
void ForEachFlag(int argc, char** argv,
                 const std::function<bool(std::string_view, std::string_view)>& apply);

// An integer flag value within [min, max], or FlagError naming the flag.
std::int64_t ParseIntFlag(std::string_view name, std::string_view value, std::int64_t min,
                          std::int64_t max);

}  // namespace rankd::cli
