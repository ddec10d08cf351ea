// A command's config file (TOML): each top-level key is one of the command's flags without its
// dashes (`port = 8080`, `endpoint = ["graph=127.0.0.1:6379"]`), applied as that flag would be.
// Flags on the command line are applied after the file, so they win.
//
// Plain functions, used from main's thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace rankd::cli {

// Calls `apply("--key", value)` for each key of the TOML file at `path` (an array calls it once
// per element, in order); `apply` returns false for a key it does not know. Throws FlagError
// naming the file (and the line, for a syntax error) when the file does not read or parse, a key
// is unknown or a value is not a string, number, boolean or array of them; a FlagError from
// `apply` comes back prefixed with the file.
void ForEachConfigSetting(const std::string& path,
                          const std::function<bool(std::string_view, std::string_view)>& apply);

}  // namespace rankd::cli
