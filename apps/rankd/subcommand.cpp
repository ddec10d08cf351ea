#include "subcommand.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace rankd::cli {

void PrintSubcommands(const SubcommandTable& table) {
  std::string text =
      "usage: " + std::string(table.command) + " <" + std::string(table.noun) + "> [arguments]\n\n";
  std::size_t width = 0;
  for (const Subcommand& entry : table.entries) width = std::max(width, entry.name.size());
  for (const Subcommand& entry : table.entries) {
    text += "  ";
    text += entry.name;
    text.append(width - entry.name.size() + 2, ' ');
    text += entry.summary;
    text += '\n';
  }
  if (!table.footer.empty()) (text += '\n') += table.footer;
  std::fputs(text.c_str(), stdout);
}

const Subcommand* FindSubcommand(const SubcommandTable& table, std::string_view name) {
  const auto it = std::ranges::find(table.entries, name, &Subcommand::name);
  return it == table.entries.end() ? nullptr : &*it;
}

int RunWithArguments(std::string command, SubcommandMain run, std::span<char* const> args) {
  std::vector<char*> argv{command.data()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(nullptr);
  return run(static_cast<int>(argv.size()) - 1, argv.data());
}

int RunSubcommand(const SubcommandTable& table, int argc, char** argv) {
  const std::string_view name = argc > 1 ? argv[1] : "--help";
  if (name == "--help" || name == "-h") {
    PrintSubcommands(table);
    return 0;
  }
  if (const Subcommand* entry = FindSubcommand(table, name)) {
    return RunWithArguments(std::string(table.command) + " " + std::string(name), entry->run,
                            std::span<char* const>(argv + 2, argv + argc));
  }
  const std::string what = name.starts_with("-") ? "flag" : std::string(table.noun);
  std::fprintf(stderr, "%s: unknown %s '%s' (try %s --help)\n", std::string(table.command).c_str(),
               what.c_str(), std::string(name).c_str(), std::string(table.command).c_str());
  return 2;
}

}  // namespace rankd::cli
