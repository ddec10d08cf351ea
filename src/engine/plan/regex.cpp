#include "plan/regex.h"

namespace rankd::engine {

std::unique_ptr<RE2> CompileRegex(std::string_view pattern, std::string_view flags,
                                  std::int64_t max_mem) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(max_mem);
  options.set_case_sensitive(flags.find('i') == std::string_view::npos);
  options.set_dot_nl(flags.find('s') != std::string_view::npos);
  std::string text = flags.find('m') != std::string_view::npos ? "(?m)" : "";
  text += pattern;
  return std::make_unique<RE2>(text, options);
}

std::optional<std::string> RegexProblem(std::string_view pattern, std::string_view flags,
                                        std::int64_t max_mem) {
  // A sorted subset of "ims": ^i?m?s?$.
  std::string_view rest = flags;
  for (const char f : {'i', 'm', 's'}) {
    if (!rest.empty() && rest.front() == f) rest.remove_prefix(1);
  }
  if (!rest.empty())
    return "regex flags \"" + std::string(flags) + "\" are not supported (use i, m and s)";
  const std::unique_ptr<RE2> re = CompileRegex(pattern, flags, max_mem);
  if (re->ok()) return std::nullopt;
  std::string message = "invalid pattern /" + std::string(pattern) + "/: " + re->error();
  const bool lookaround = pattern.find("(?=") != std::string_view::npos ||
                          pattern.find("(?!") != std::string_view::npos ||
                          pattern.find("(?<=") != std::string_view::npos ||
                          pattern.find("(?<!") != std::string_view::npos;
  bool backreference = pattern.find("\\k<") != std::string_view::npos;
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] == '\\' && pattern[i + 1] >= '1' && pattern[i + 1] <= '9') backreference = true;
  }
  if (lookaround) {
    message += " (RE2 has no lookaround: (?=, (?!, (?<= and (?<! are errors)";
  } else if (backreference) {
    message += " (RE2 has no backreferences)";
  }
  return message;
}

}  // namespace rankd::engine
