// The subcommand tables of the rankd binary: `rankd <command> [arguments]` at the top level, and
// the same shape one level down (`rankd bench <mode> [flags]`). A table is a list of entries,
// each a name, a one-line summary and the function that runs it with its own arguments; adding a
// command is adding an entry.
//
// Plain values and functions, used from main's thread before any other thread exists.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace rankd::cli {

// A subcommand's entry point, main()-shaped: argv[0] is the command as typed (e.g.
// "rankd bench eventloop", which its messages name), argv[1..argc) its own arguments, and
// argv[argc] is null. Returns the process exit code: 0 on success, 2 for bad usage. Every
// subcommand answers --help.
using SubcommandMain = int (*)(int argc, char** argv);

struct Subcommand {
  std::string_view name;     // as typed: "bench", "version"
  std::string_view summary;  // one line for the listing
  SubcommandMain run;
};

// One level of subcommands.
struct SubcommandTable {
  std::string_view command;  // the words before an entry's name: "rankd", "rankd bench"
  std::string_view noun;     // what an entry is called in the usage and messages: "command"
  std::span<const Subcommand> entries;
  std::string_view footer;  // printed after the entries; lines ending in '\n', or empty
};

// Prints the usage line, the entries with their summaries, and the footer, to stdout.
void PrintSubcommands(const SubcommandTable& table);

// The entry called `name`, or null.
const Subcommand* FindSubcommand(const SubcommandTable& table, std::string_view name);

// Runs `run` with argv[0] = `command` followed by `args`; returns its exit code.
int RunWithArguments(std::string command, SubcommandMain run, std::span<char* const> args);

// Runs the entry named by argv[1] with argv[2..] as its arguments (its argv[0] is
// "<table.command> <name>"). Without arguments, or with --help or -h, lists the entries and
// returns 0. An unknown name or flag prints "<table.command>: unknown <noun> '<it>' (try ...)"
// to stderr and returns 2.
int RunSubcommand(const SubcommandTable& table, int argc, char** argv);

}  // namespace rankd::cli
