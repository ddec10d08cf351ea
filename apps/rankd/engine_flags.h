// The flags `rankd run` and `rankd serve` share (where the plans are, which Redis to read, how
// to schedule), and the loop over a command line or config file that applies them.
//
// Plain values and functions, used from main's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/ranker.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::cli {

// A flag with a bad value: the message names the flag and the value.
class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a flag's value is, as a config file must write it: `port = 8080`, not `port = "8080"`.
enum class FlagType : std::uint8_t {
  kString,
  kInteger,
  kNumber,  // an integer or a float
};

// One flag a command knows.
struct FlagSpec {
  std::string_view name;  // with its dashes: "--port"
  FlagType type;
  bool repeatable = false;  // given more than once; in a config file, an array
};

// "a string", "an integer", "a number", as messages say what a flag takes.
std::string_view FlagTypeText(FlagType type) noexcept;

struct EngineFlags {
  std::string plans;
  std::string registry;
  engine::Environment env = engine::Environment::kDev;
  std::vector<engine::EndpointOverride> endpoints;
  engine::Scheduler scheduler = engine::Scheduler::kAsync;
  std::int64_t deadline_ms = 100;
  std::size_t cpu_threads = 0;                  // 0: one per core
  std::optional<std::int64_t> node_timeout_ms;  // for nodes without timeout_ms; none: no limit
};

// The engine flags, for a command's table of the flags it knows.
extern const std::span<const FlagSpec> kEngineFlagSpecs;
// The help lines of the engine flags, for a command's usage text.
extern const std::string_view kEngineFlagsHelp;

// Applies `--name value` when it is an engine flag (true), or returns false for another name.
// Throws FlagError for a bad value.
bool ApplyEngineFlag(EngineFlags& flags, std::string_view name, std::string_view value);
// Throws FlagError when --plans or --registry is missing.
void RequireEngineFlags(const EngineFlags& flags);
// Sizes the CPU pool by --cpu_threads: before anything uses the pool (FlagError after).
void ApplyCpuThreads(const EngineFlags& flags);
// The engine options the flags set: the default deadline, the scheduler, the default node
// timeout.
engine::RankerOptions RankerOptionsOf(const EngineFlags& flags);

// The spec in `specs` named `name`, or null.
const FlagSpec* FindFlag(std::span<const FlagSpec> specs, std::string_view name);

// Calls `apply(name, value)` for each flag of argv[1..argc), written `--name value` or
// `--name=value`. Throws FlagError for a name not in `specs` ("unknown flag '--bogus'", before
// looking for its value), a stray argument or a missing value; `apply` returning false is taken
// as an unknown flag too.
void ForEachFlag(int argc, char** argv, std::span<const FlagSpec> specs,
                 const std::function<bool(std::string_view, std::string_view)>& apply);

// The arguments other than the switch `name` (a flag that takes no value, such as "--json"),
// argv[0] first, for ForEachFlag; `seen` is set when the switch is among them.
std::vector<char*> TakeSwitch(int argc, char** argv, std::string_view name, bool& seen);

// An integer flag value within [min, max], or FlagError naming the flag.
std::int64_t ParseIntFlag(std::string_view name, std::string_view value, std::int64_t min,
                          std::int64_t max);

// The text of the file at `path`, which the command line names as `what` ("config", "A"), or
// FlagError naming both and why it does not open or read ("config FILE: cannot open (No such
// file or directory)").
std::string ReadNamedFile(std::string_view what, const std::string& path);

}  // namespace rankd::cli
