#include "diff_command.h"

#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "engine_flags.h"
#include "rankd/engine/experiments/ranking_diff.h"
#include "rankd/engine/experiments/response_ranking.h"

namespace rankd::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: %s A.json B.json [--output NAME] [--score KEY] [--k N] [--json]\n"
    "Compares two /rank responses to the same request, each a file holding one response (as\n"
    "rankd serve or rankd run writes it): overlap@k, rank-biased overlap (p = 0.9), Kendall's\n"
    "tau over the common items, the items only in A or only in B, and the biggest rank moves\n"
    "(docs/experiments.md, \"The ranking diff\"). Items are the rows' ids. Exits 1 when a file is\n"
    "not a response it can compare, 2 for bad arguments or a file it cannot read.\n"
    "  --output NAME      the output to compare (default: the responses' only output)\n"
    "  --score KEY        the rows' score column, e.g. final_score (default: no scores)\n"
    "  --k N              the depth of overlap@k (default 10)\n"
    "  --json             print the diff as one JSON object instead of text\n";

struct DiffFlags {
  std::string a;  // the files
  std::string b;
  std::string output;
  std::string score;
  engine::experiments::RankingDiffOptions options;
  bool json = false;
};

// The flags, or FlagError. The two files may stand anywhere between the flags; --json takes no
// value.
DiffFlags ParseFlags(int argc, char** argv) {
  DiffFlags flags;
  const std::vector<char*> args = TakeSwitch(argc, argv, "--json", flags.json);
  std::vector<char*> rest = {argv[0]};  // the flags, for ForEachFlag
  std::vector<std::string> files;
  bool value_next = false;  // the previous argument is a flag written `--name value`
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (value_next) {
      rest.push_back(args[i]);
      value_next = false;
    } else if (arg.starts_with("-")) {
      rest.push_back(args[i]);
      value_next = arg.find('=') == std::string_view::npos;
    } else if (files.size() < 2) {
      files.emplace_back(arg);
    } else {
      rest.push_back(args[i]);  // a third file: ForEachFlag names it as a stray argument
    }
  }
  static constexpr FlagSpec kDiffFlags[] = {
      {"--output", FlagType::kString},
      {"--score", FlagType::kString},
      {"--k", FlagType::kInteger},
  };
  ForEachFlag(static_cast<int>(rest.size()), rest.data(), kDiffFlags,
              [&](std::string_view name, std::string_view value) {
                if (name == "--output") {
                  flags.output = value;
                } else if (name == "--score") {
                  flags.score = value;
                } else if (name == "--k") {
                  flags.options.k = static_cast<std::size_t>(
                      ParseIntFlag(name, value, 1, std::numeric_limits<std::int32_t>::max()));
                } else {
                  return false;
                }
                return true;
              });
  if (files.size() < 2) throw FlagError("two response files are required, A.json and B.json");
  flags.a = files[0];
  flags.b = files[1];
  return flags;
}

}  // namespace

int RunDiff(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(kUsage.data(), argv[0]);
    return 0;
  }
  DiffFlags flags;
  std::string text_a, text_b;
  try {
    flags = ParseFlags(argc, argv);
    text_a = ReadNamedFile("A", flags.a);
    text_b = ReadNamedFile("B", flags.b);
  } catch (const FlagError& e) {
    std::fprintf(stderr, "%s: %s (try %s --help)\n", argv[0], e.what(), argv[0]);
    return 2;
  }
  const auto list_a = engine::experiments::RankedListOfResponse(text_a, flags.output, flags.score);
  if (!list_a) {
    std::fprintf(stderr, "%s: A %s: %s\n", argv[0], flags.a.c_str(), list_a.error().c_str());
    return 1;
  }
  const auto list_b = engine::experiments::RankedListOfResponse(text_b, flags.output, flags.score);
  if (!list_b) {
    std::fprintf(stderr, "%s: B %s: %s\n", argv[0], flags.b.c_str(), list_b.error().c_str());
    return 1;
  }
  const auto diff = engine::experiments::DiffRankings(*list_a, *list_b, flags.options);
  if (!diff) {
    std::fprintf(stderr, "%s: %s (A is %s, B is %s)\n", argv[0], diff.error().c_str(),
                 flags.a.c_str(), flags.b.c_str());
    return 1;
  }
  std::string out;
  if (flags.json) {
    engine::experiments::WriteRankingDiffJson(out, *diff);
    out.push_back('\n');
  } else {
    engine::experiments::WriteRankingDiffText(out, *diff);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace rankd::cli
