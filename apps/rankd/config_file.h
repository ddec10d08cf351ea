// A command's config file (TOML): each top-level key is one of the command's flags without its
// dashes (`port = 8080`, `endpoint = ["graph=127.0.0.1:6379"]`), applied as that flag would be.
// Flags on the command line are applied after the file, so they win.
//
// Plain functions, used from main's thread.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "engine_flags.h"

namespace rankd::cli {

// Calls `apply("--key", value)` for each key of the TOML file at `path` (an array calls it once
// per element, in order). Each key must be one of `specs` and hold a value of its type: a string
// for a string flag (`env = "test"`), an integer for an integer flag (`port = 8080`, not
// `port = "8080"`), an integer or a float for a number flag, and an array of such values only for
// a repeatable flag. Throws FlagError naming the file when it does not open ("config FILE: cannot
// open (No such file or directory)") or parse (with the line and column), and naming the file,
// the key and its line for an unknown key, a value of the wrong type, or a FlagError from
// `apply`.
void ForEachConfigSetting(const std::string& path, std::span<const FlagSpec> specs,
                          const std::function<bool(std::string_view, std::string_view)>& apply);

}  // namespace rankd::cli
